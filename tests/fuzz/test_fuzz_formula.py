"""Fuzz the formula path: R formula text from a grammar (and raw character soup) on random frames.

Properties:

* ``dplr(formula, frame, eps=0)`` and ``build_design`` (learning and declared-only) return, or
  raise ``ValueError``/``TypeError``/``KeyError`` with a message — never another exception,
  never a ``RuntimeWarning``, never a file written (they run in an empty directory);
* a fitted model's ``predict`` gives probabilities in [0, 1] (or NaN with class ``None``);
* text that parses deparses to text that parses back to the same text (saved models store
  formulas as deparsed text and parse them again);
* any column name is data: ``y ~ .`` and a backquoted name fit whatever the name holds.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from .fuzzlib import check_probabilities, clean_call, examples, formula_and_frame, formula_texts
from privatelr import dplr
from privatelr.design import build_design
from privatelr.design.rsyntax import Name, deparse, parse
from privatelr.persist import loads

@pytest.fixture(scope="module")
def empty_cwd(tmp_path_factory):
    """An empty working directory for the module (restored afterwards)."""
    where = tmp_path_factory.mktemp("fuzz-cwd")
    old = os.getcwd()
    os.chdir(where)
    try:
        yield where
    finally:
        os.chdir(old)


def _formula_property(formula, frame, cwd):
    clean_call(lambda: build_design(formula, frame))
    clean_call(lambda: build_design(formula, frame, learn=False))
    model, _ = clean_call(lambda: dplr(formula, frame, eps=0))
    if model is not None:
        check_probabilities(model, frame, len(frame))
    assert os.listdir(cwd) == []


@pytest.mark.heavy
@settings(max_examples=examples(300))
@given(case=formula_and_frame())
def test_formula_fits_or_refuses_cleanly(empty_cwd, case):
    formula, frame = case
    _formula_property(formula, frame, empty_cwd)


@settings(max_examples=examples(5))
@example(formula="y ~ 0")
@given(formula=st.sampled_from(["y ~ 0", "y ~ -1", "y ~ a - a - 1", "y ~ 0 + a - a",
                                "y ~ (a - a) - 1"]))
def test_a_model_without_columns_is_refused(empty_cwd, formula):
    frame = pd.DataFrame({"a": [0.0, 0.5], "y": [0, 1]})
    _formula_property(formula, frame, empty_cwd)


@settings(max_examples=examples(10))
@example(formula="y ~ 0x" + "F" * 256)
@given(formula=st.integers(256, 300).map(lambda k: "y ~ I(a + 0x" + "f" * k + ")"))
def test_huge_hex_literal_is_inf(empty_cwd, formula):
    frame = pd.DataFrame({"a": [0.1, 0.2, 0.3, 0.4], "y": [0, 1, 0, 1]})
    _formula_property(formula, frame, empty_cwd)


def _stable(text):
    tree, _ = clean_call(lambda: parse(text), allowed=(ValueError,))
    if tree is None:
        return
    once = deparse(tree)
    again = deparse(parse(once))
    assert again == once, (text, once, again)


@settings(max_examples=examples(400))
@given(text=formula_texts())
def test_parse_deparse_is_stable(text):
    _stable(text)


@settings(max_examples=examples(10))
@example(text="`\\`")
@given(text=st.text(st.sampled_from("ab\\ "), min_size=1, max_size=5).map(
    lambda s: f"`{s}\\`"))
def test_backslash_name_deparse_is_stable(text):
    _stable(text)


# ---- column names are data -------------------------------------------------------------------

_COLUMN_NAMES = st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=3, unique=True)


def _names_property(names):
    """``y ~ .``, ``dplr(frame, target="y")`` and the package's own quoting of each name
    (``deparse(Name(name))``, what a saved model stores) all fit, and the fit survives JSON."""
    rng = np.random.default_rng(len(names))
    frame = pd.DataFrame({nm: rng.uniform(-0.3, 0.3, 8) for nm in names})
    frame["y"] = [0, 1] * 4
    quoted = "y ~ " + " + ".join(deparse(Name(nm)) for nm in names)
    for fit in (lambda: dplr("y ~ .", frame, eps=0), lambda: dplr(frame, target="y", eps=0),
                lambda: dplr(quoted, frame, eps=0)):
        model, exc = clean_call(fit)
        assert exc is None, (names, exc)
        assert len(model.coefficients) == len(names) + 1
        p = check_probabilities(model, frame, 8)
        back = loads(model.to_json())
        assert np.array_equal(back.predict(frame), p, equal_nan=True)


@pytest.mark.heavy
@settings(max_examples=examples(100))
@given(names=_COLUMN_NAMES)
def test_any_column_name_is_data(names):
    assume("y" not in names)
    _names_property(names)


@settings(max_examples=examples(5))
@example(names=["\\"])
@given(names=st.text(st.sampled_from("ab\\"), min_size=1, max_size=3).filter(
    lambda s: "\\" in s).map(lambda s: [s]))
def test_backslash_column_name_is_data(names):
    _names_property(names)


@settings(max_examples=examples(5))
@example(names=["`"])
@given(names=st.text(st.sampled_from("ab`"), min_size=1, max_size=3).filter(
    lambda s: "`" in s).map(lambda s: [s]))
def test_backquote_column_name_is_data(names):
    _names_property(names)


@example(names=["."])
@given(names=st.just(["."]))
def test_dot_column_name_is_data(names):
    _names_property(names)


@settings(max_examples=examples(5))
@example(names=["a\n"])
@given(names=st.text(st.sampled_from("ab."), min_size=1, max_size=3).filter(
    lambda s: s[0] != ".").map(lambda s: [s + "\n"]))
def test_name_ending_in_newline_is_data(names):
    _names_property(names)


@settings(max_examples=examples(5))
@example(big=10**400, where="y")
@given(big=st.integers(2**1024, 2**1100), where=st.sampled_from(["y", "a"]))
def test_object_column_with_a_huge_int(empty_cwd, big, where):
    frame = pd.DataFrame({"a": [0.1, 0.2], "y": [0, 1]})
    frame[where] = pd.Series([0, big], dtype=object)
    _formula_property("y ~ a", frame, empty_cwd)


@settings(max_examples=examples(10))
@example(y=[0, 1, 2])
@given(y=st.lists(st.integers(0, 3), min_size=3, max_size=8).filter(
    lambda v: len(set(v)) != 2))
def test_class_labels_keep_their_type(y):
    frame = pd.DataFrame({"a": np.linspace(-0.4, 0.4, len(y)), "y": y})
    # a numeric response must hold only 0 and 1 (R's manual) ...
    model, exc = clean_call(lambda: dplr("y ~ a", frame, eps=0))
    if set(y) <= {0, 1}:
        assert exc is None
    else:
        assert isinstance(exc, ValueError) and "other than 0 and 1" in str(exc), exc
    # ... while R's code (compat) fits any numeric response, its smallest value coded 0
    model, exc = clean_call(lambda: dplr("y ~ a", frame, eps=0, compat="PrivateLR"))
    assert exc is None
    check_probabilities(model, frame, len(y))
