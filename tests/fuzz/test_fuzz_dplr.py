"""Fuzz ``dplr()``'s and ``predict()``'s other arguments: a valid private fit, then one or two
arguments made hostile (extreme numbers, NaN, infinities, huge ints, strings, lists, None,
booleans; declared ``levels`` that are empty, repeated, of the wrong kind or for missing
columns; ``data``/``object`` of the wrong kind; ``target`` with a formula).

Properties:

* ``dplr`` returns a model with finite coefficients that scores the training data, or raises
  ``ValueError``/``TypeError``/``KeyError`` whose message names one of the hostile arguments;
* ``predict(model, data, type=...)`` with a hostile ``type`` or ``data`` returns one
  prediction per row or raises such an error naming ``type``/``data``/the missing column;
* same seed, same bits: a successful fit with an integer ``random_state`` is reproduced.
"""

from __future__ import annotations

import functools
import io
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .fuzzlib import check_probabilities, clean_call, examples
from privatelr import dplr, predict

LEVELS = ["p", "q", "r"]
FORMULA = "y ~ a + b + s + f"


@functools.lru_cache(maxsize=None)
def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 30
    return pd.DataFrame({
        "a": rng.uniform(-0.4, 0.4, n), "b": rng.uniform(-0.4, 0.4, n),
        "s": pd.Series(rng.choice(LEVELS, n), dtype=object),
        "f": pd.Categorical(rng.choice(LEVELS, n), categories=LEVELS),
        "y": (rng.uniform(size=n) < 0.5).astype(np.int64)})


def frame() -> pd.DataFrame:
    return _frame().copy()


NUMBERS = [5e-324, 1e-300, 0.5, 2.0, 1e300, 1e308, float("inf"), float("-inf"), float("nan"), 0,
           -1, 10**400, np.float32(0.5), "1", [1.0], None, True]
HOSTILE = {
    "eps": NUMBERS,
    "lambda_": NUMBERS,
    "data_norm": NUMBERS,
    "rp_dim": [0, 1, 2, -1, 100, 2.5, 2.0, "2", None, True, 10**30, -10**30],
    "threshold": ["fixed", "youden", "topleft", "median", None, 1, ["fixed"]],
    "do_scale": [True, False, 1, "yes", None],
    "op": [True, False, 0, "no"],
    "clip": [True, False, 1, "yes", None],
    "compat": [None, "PrivateLR", "privatelr", "R", 1, ""],
    "random_state": [0, 5, -1, 2**70, "seed", 1.5, [1], True],
    "verbose": [0, 1, 2, -1, "1", 2.5, None],
    "levels": ["empty-list", "repeated", "wrong-values", "missing-column", "string", "none-value",
               "nested", "not-a-dict", "mixed-kinds", "nan-level", "cat-conflict", "bool-level",
               "numeric-for-a", "huge-int", "subset"],
    "target": ["y", 0, None],
    "data": ["string", "list", "dict-scalars", "ndarray-3d", "series", "empty", "ragged-dict",
             "none"],
    "object": [3, None, b"y ~ a", ["y ~ a"], "y ~ a + b + s + f + zz"],
}


def _levels(how: str):
    return {"empty-list": {"s": []}, "repeated": {"s": ["p", "p", "q", "r"]},
            "wrong-values": {"s": ["x", "z"]}, "missing-column": {"zz": ["p"], "s": LEVELS},
            "string": {"s": "pqr"}, "none-value": {"s": ["p", None, "r"]},
            "nested": {"s": [["p"], ["q"], ["r"]]}, "not-a-dict": [("s", LEVELS)],
            "mixed-kinds": {"s": ["p", 1, True]}, "nan-level": {"s": ["p", "q", "r", np.nan]},
            "cat-conflict": {"s": LEVELS, "f": ["r", "q", "p"]}, "bool-level": {"s": [True]},
            "numeric-for-a": {"s": LEVELS, "a": [0, 1]}, "huge-int": {"s": LEVELS + [10**400]},
            "subset": {"s": ["p", "q"]}}[how]


def _data(how: str):
    df = frame()
    return {"string": "data.csv", "list": [[1, 2], [3, 4]], "dict-scalars": {"y": 1, "a": 0.5},
            "ndarray-3d": np.zeros((2, 2, 2)), "series": df["a"], "empty": df.iloc[:0],
            "ragged-dict": {"y": [0, 1], "a": [0.1]}, "none": None}[how]


@st.composite
def calls(draw):
    """``(kwargs, hostile names)``: ``dplr(FORMULA, frame, eps=1, levels, clip, seed)`` with 0-2
    arguments replaced."""
    kwargs = dict(object=FORMULA, data=frame(), eps=1.0, levels={"s": LEVELS}, clip=True,
                  random_state=draw(st.integers(0, 2**32)))
    names = draw(st.lists(st.sampled_from(sorted(HOSTILE)), max_size=2, unique=True))
    for name in names:
        value = draw(st.sampled_from(HOSTILE[name]))
        if name == "levels":
            value = _levels(value)
        elif name == "data":
            value = _data(value)
        kwargs[name] = value
    return kwargs, names


_ALIASES = {"lambda_": ("lambda_", "lambda"),
            "object": ("formula", "dplr()", "object", "label vector"),
            "levels": ("levels", "level", "categories", "declare"), "data": ("data", "DataFrame"),
            "target": ("target",), "random_state": ("random_state",),
            # a private fit refuses a data-driven scaling/threshold and names the argument;
            # rows outside data_norm are named by data_norm/clip
            "clip": ("clip", "data_norm"), "do_scale": ("do_scale",),
            "compat": ("compat", "PrivateLR")}


def names_an_argument(message: str, names) -> bool:
    return any(alias in message for name in names for alias in _ALIASES.get(name, (name,)))


def _dplr_property(kwargs, names):
    kwargs = dict(kwargs)
    obj, data = kwargs.pop("object"), kwargs.pop("data")
    with redirect_stdout(io.StringIO()):                         # verbose=
        model, exc = clean_call(lambda: dplr(obj, data, **kwargs))
    if exc is not None:
        msg = str(exc.args[0]) if isinstance(exc, KeyError) else str(exc)
        assert names_an_argument(msg, names), (names, type(exc).__name__, msg)
        return
    coef = model.coefficients.to_numpy()
    assert np.isfinite(coef).all(), coef
    check_probabilities(model, frame(), len(frame()))
    seed = kwargs.get("random_state")
    if isinstance(seed, int) and not isinstance(seed, bool):
        with redirect_stdout(io.StringIO()):
            again, exc = clean_call(lambda: dplr(obj, data, **kwargs))
        assert exc is None and np.array_equal(again.coefficients.to_numpy(), coef)


@settings(max_examples=examples(150))
@given(case=calls())
def test_dplr_fits_or_names_the_argument(case):
    _dplr_property(*case)


@functools.lru_cache(maxsize=None)
def _model():
    model, exc = clean_call(lambda: dplr(FORMULA, frame(), eps=1.0, levels={"s": LEVELS},
                                         clip=True, random_state=0))
    assert exc is None
    return model


@settings(max_examples=examples(40))
@given(type_=st.sampled_from(["probabilities", "response", "class", "link", "prob", "",
                              None, 1, ["class"], "CLASS"]),
       data=st.sampled_from(["frame", "string", "list", "dict-scalars", "ndarray-3d", "series",
                             "empty", "ragged-dict", "none", "missing-column", "row-series",
                             "dict", "wrong-kind"]))
def test_predict_scores_or_names_the_argument(type_, data):
    df = frame()
    new = {"frame": df, "missing-column": df.drop(columns="s"), "row-series": df.iloc[3],
           "dict": {c: df[c].tolist() for c in df.columns},
           "wrong-kind": df.assign(a=df["s"])}.get(data) if data in (
        "frame", "missing-column", "row-series", "dict", "wrong-kind") else _data(data)
    out, exc = clean_call(lambda: predict(_model(), new, type=type_))
    if exc is not None:
        msg = str(exc)
        assert any(w in msg for w in ("type", "data", "column", "'s'", "'a'")), msg
        return
    n = 1 if data == "row-series" else len(pd.DataFrame(new))
    assert len(out) == n


@settings(max_examples=examples(5))
@example(eps=5e-324)
@example(eps=1e308)
@given(eps=st.sampled_from([5e-324, 1e-320, 1e305, 1e308]))
def test_extreme_eps_with_the_default_lambda_is_named(eps):
    _dplr_property(dict(object=FORMULA, data=frame(), eps=eps, levels={"s": LEVELS}, clip=True,
                        random_state=0), ["eps"])
