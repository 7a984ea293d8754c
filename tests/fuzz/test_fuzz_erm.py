"""Fuzz ``privatelr.erm.fit``: random small problems, then one or two arguments made hostile.

Hostile values: the extremes of a double (5e-324, 1e-320, 1e308), NaN, infinities, zero and
negative numbers, integers too large for a double, strings, lists, None, booleans, arrays of the
wrong shape, kind or length.

Properties:

* ``fit`` returns a finite coefficient vector of the design's width, or raises ``ValueError`` /
  ``TypeError`` whose message names one of the arguments that were made hostile (or, for a
  legitimate problem the solver cannot finish, the documented non-convergence refusal naming
  ``maxiter``);
* same seed, same bits: the same call with the same integer ``random_state`` returns the same
  coefficients.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .fuzzlib import clean_call, examples
from privatelr import erm

NUMBERS = [5e-324, 1e-320, 1e-300, 1e-8, 0.5, 1.0, 3.0, 1e8, 1e300, 1e308, float("inf"),
           float("-inf"), float("nan"), 0, 0.0, -1, -1e-300, 10**400, np.float32(0.25),
           np.int64(2), "1", [1.0], None, True]
HOSTILE = {
    "eps": NUMBERS,
    "lambda_": NUMBERS,
    "data_norm": NUMBERS,
    "h": NUMBERS,
    "weights_bound": NUMBERS,
    "gtol": [1e-10, 1e-3, 0, -1.0, float("nan"), float("inf"), 5e-324, "x", None, [1e-10]],
    "maxiter": [None, 0, 1, 3, -1, 2.5, "3", 10**20, True, [5]],
    "method": ["objective", "output", "nonprivate", "bogus", None, 1, ["output"]],
    "loss": ["logistic", "huber", "hinge", None, 3],
    "solver": ["auto", "newton", "lbfgs", "bfgs", None, 0],
    "small_eps": ["adjust", "error", "warn", None],
    "clip": [True, False, 1, "yes", None, np.bool_(True)],
    "allow_nonconverged": [True, False, 1, None],
    "random_state": [0, 7, -1, 2**70, "seed", 1.5, [1], True],
    "weights": ["ones", "negative", "nan", "strings", "short", "2d", "big"],
    "X": ["nan", "inf", "huge", "strings", "3d", "empty", "ragged", "bool", "object"],
    "y": ["02", "strings", "nan", "short", "same", "pm1", "bool", "2d"],
}


def _design(draw):
    n = draw(st.integers(2, 10))
    d = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    X = rng.uniform(-1, 1, size=(n, d))
    X /= np.maximum(1.0, np.sqrt((X * X).sum(axis=1)))[:, None]      # rows in the unit ball
    y = np.arange(n) % 2
    rng.shuffle(y)
    return X, y


def _hostile_array(name, how, X, y):
    n, d = X.shape
    if name == "weights":
        return {"ones": np.ones(n), "negative": -np.ones(n), "nan": np.full(n, np.nan),
                "strings": np.array(["1"] * n), "short": np.ones(max(1, n - 1)),
                "2d": np.ones((n, 2)), "big": np.full(n, 1e308)}[how]
    if name == "X":
        bad = X.copy()
        if how in ("nan", "inf", "huge"):
            bad[0, 0] = {"nan": np.nan, "inf": np.inf, "huge": 1e200}[how]
            return bad
        return {"strings": X.astype(str), "3d": X[None], "empty": X[:0], "bool": X > 0,
                "ragged": [list(r) for r in X[:-1]] + [list(X[-1][:-1]) or [0.0, 1.0]],
                "object": X.astype(object)}[how]
    return {"02": y * 2, "strings": y.astype(str), "nan": np.where(y == 1, np.nan, 0.0),
            "short": y[:-1], "same": np.ones(n), "pm1": 2 * y - 1, "bool": y == 1,
            "2d": np.c_[y, y]}[how]


@st.composite
def calls(draw):
    """``(kwargs, hostile names)`` for ``erm.fit``: a valid call with 0-2 arguments replaced."""
    X, y = _design(draw)
    kwargs = dict(X=X, y=y, lambda_=draw(st.sampled_from([0.01, 0.1, 1.0])),
                  eps=draw(st.sampled_from([0.0, 0.5, 1.0, 4.0])),
                  method=draw(st.sampled_from(["objective", "output"])),
                  loss=draw(st.sampled_from(["logistic", "huber"])),
                  random_state=draw(st.integers(0, 2**32)))
    names = draw(st.lists(st.sampled_from(sorted(HOSTILE)), max_size=2, unique=True))
    for name in names:
        value = draw(st.sampled_from(HOSTILE[name]))
        if name in ("weights", "X", "y"):
            value = _hostile_array(name, value, X, y)
            if name == "weights":
                kwargs.setdefault("weights_bound", 1.0)
        kwargs[name] = value
    if "h" in names or draw(st.booleans()):
        kwargs["loss"] = "huber" if "h" in names else kwargs["loss"]
    return kwargs, names


_ALIASES = {"lambda_": ("lambda_", "lambda"), "weights_bound": ("weights_bound",),
            "random_state": ("random_state",), "X": ("X",), "y": ("y",),
            # small_eps="error" refuses a too small eps' (the C programs' rule) by naming eps
            "small_eps": ("small_eps", "eps")}

#: the loss at margin 0 (J(0) = mean weight x l(0)): logistic log 2, Huber (h <= 0.5) 1
_LOSS_AT_ZERO = {"logistic": float(np.log(2.0)), "huber": 1.0}


def names_an_argument(message: str, names) -> bool:
    return any(alias in message for name in names for alias in _ALIASES.get(name, (name,)))


def _fit_property(kwargs, names):
    result, exc = clean_call(lambda: erm.fit(**kwargs))
    if exc is not None:
        assert isinstance(exc, (ValueError, TypeError)), exc
        msg = str(exc)
        nonconverged = "did not converge" in msg and "maxiter" in msg
        assert names_an_argument(msg, names) or nonconverged, (names, msg)
        return
    d = np.asarray(kwargs["X"], dtype=np.float64).shape[1]
    assert result.coef.shape == (d,) and np.isfinite(result.coef).all(), result.coef
    if result.method == "nonprivate" and result.convergence == 0:
        # a converged non-private fit is the minimiser: no worse than w = 0
        w = kwargs.get("weights")
        j0 = _LOSS_AT_ZERO[result.loss] * (1.0 if w is None else float(np.mean(w)))
        assert result.value <= j0 * (1 + 1e-9), (result.value, j0, result.coef)
    if isinstance(kwargs.get("random_state"), (int, np.integer)) and \
            not isinstance(kwargs["random_state"], bool):
        again, exc = clean_call(lambda: erm.fit(**kwargs))
        assert exc is None, exc
        assert np.array_equal(again.coef, result.coef)


@pytest.mark.heavy
@settings(max_examples=examples(800))
@given(case=calls())
def test_fit_returns_finite_coefficients_or_names_the_argument(case):
    _fit_property(*case)


# ---- what the fuzzers found (fixed; kept with their minimal reproducers) ---------------------

@settings(max_examples=examples(10))
@example(case=(dict(X=np.array([[0.5]]), y=np.array([1]), lambda_=10**400, eps=1.0),
               ["lambda_"]))
@given(case=calls().flatmap(lambda c: st.sampled_from(
    ["eps", "lambda_", "data_norm", "weights_bound"]).map(
        lambda name: ({**c[0], name: 10**400}, [name] + list(c[1])))))
def test_an_int_too_large_for_a_double_is_named(case):
    _fit_property(*case)


@settings(max_examples=examples(10))
@example(case=(dict(X=np.array([[0.5]]), y=np.array([1]), lambda_=1e-300, eps=0.0,
                    loss="huber"), ["lambda_"]))
@given(case=st.tuples(st.floats(0.1, 1.0), st.sampled_from([1e-300, 1e-250, 1e-200])).map(
    lambda t: (dict(X=np.array([[t[0]], [-t[0]]]), y=np.array([1, 0]), lambda_=t[1], eps=0.0,
                    loss="huber"), ["lambda_"])))
def test_huber_fit_with_a_tiny_lambda_is_finite(case):
    # Beyond the Huber band the loss is 0 and the ridge 1e-300: every w >= (1 + h)/x minimises
    # J to double precision. Newton's step |g|/lambda is capped (no overflow); the fit stops on
    # the flat part with a finite coefficient and a relative gradient below gtol.
    _fit_property(*case)


@settings(max_examples=examples(10))
@example(case=(dict(X=np.array([[1.0], [0.0]]), y=np.array([1, 0]), lambda_=1.0, eps=1e-250,
                    gtol=0, random_state=7), ["eps", "gtol"]))
@given(case=st.tuples(st.sampled_from([1e-300, 1e-250, 1e-200]), st.integers(0, 30)).map(
    lambda t: (dict(X=np.array([[1.0], [0.0]]), y=np.array([1, 0]), lambda_=1.0, eps=t[0],
                    gtol=0, random_state=t[1]), ["eps", "gtol"])))
def test_gtol_zero_with_a_tiny_eps_does_not_overflow(case):
    _fit_property(*case)
