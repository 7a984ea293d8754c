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
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from .fuzzlib import (check_probabilities, clean_call, examples, formula_and_frame,
                     formula_texts, mixed_labels)
from privatelr import dplr
from privatelr.design import build_design
from privatelr.design.rsyntax import Name, deparse, parse
from privatelr.persist import loads

# ---- known, open findings (each has an xfail test below with its minimal reproducer) --------

#: A hexadecimal literal too large for a double (R reads it as Inf): OverflowError.
HEX_OVERFLOW = re.compile(r"0[xX]0*[0-9a-fA-F]{256}")
#: A backslash inside a backquoted name: deparse doubles it, the parser does not undo it.
BACKSLASH_NAME = re.compile(r"`[^`]*\\[^`]*`")
#: A backquoted name ending in a newline: deparsed unquoted, read back without the newline.
NEWLINE_NAME = re.compile(r"`[^`]*\n`")


def known_formula_bug(text: str) -> bool:
    return bool(HEX_OVERFLOW.search(text) or BACKSLASH_NAME.search(text) or
                NEWLINE_NAME.search(text))


def known_name_bug(name: str) -> bool:
    return "\\" in name or "`" in name or name == "." or name.endswith("\n")


def known_frame_bug(frame) -> bool:
    """An object column holding an int too large for a double (OverflowError)."""
    return any(frame[c].dtype == object and any(isinstance(v, int) and abs(v) > 2**1023
                                                for v in frame[c].tolist())
               for c in frame.columns)


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


def _formula_property(formula, frame, cwd, *, skip_empty_design=True):
    design, _ = clean_call(lambda: build_design(formula, frame))
    clean_call(lambda: build_design(formula, frame, learn=False))
    # a design without columns: open finding test_a_model_without_columns_is_refused
    if not (skip_empty_design and design is not None and design.X.shape[1] == 0):
        model, _ = clean_call(lambda: dplr(formula, frame, eps=0))
        if model is not None:
            # mixed-type labels: see test_class_labels_keep_their_type (open finding)
            check_probabilities(model, frame, len(frame), strict_labels=not mixed_labels(model))
    assert os.listdir(cwd) == []


@settings(max_examples=examples(300))
@given(case=formula_and_frame())
def test_formula_fits_or_refuses_cleanly(empty_cwd, case):
    formula, frame = case
    assume(not known_formula_bug(formula) and not known_frame_bug(frame))
    _formula_property(formula, frame, empty_cwd)


@settings(max_examples=examples(5))
@example(formula="y ~ 0")
@given(formula=st.sampled_from(["y ~ 0", "y ~ -1", "y ~ a - a - 1", "y ~ 0 + a - a",
                                "y ~ (a - a) - 1"]))
def test_a_model_without_columns_is_refused(empty_cwd, formula):
    frame = pd.DataFrame({"a": [0.0, 0.5], "y": [0, 1]})
    _formula_property(formula, frame, empty_cwd, skip_empty_design=False)


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
    assume(not known_formula_bug(text))
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


@settings(max_examples=examples(100))
@given(names=_COLUMN_NAMES)
def test_any_column_name_is_data(names):
    assume(not any(known_name_bug(nm) for nm in names) and "y" not in names)
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
    model, exc = clean_call(lambda: dplr("y ~ a", frame, eps=0))
    assert exc is None
    check_probabilities(model, frame, len(y))
