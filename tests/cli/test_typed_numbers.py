"""The command line's numeric columns read by pyarrow's kernels equal the Python path's, value
for value and bit for bit (privatelr.cli._arrow_numbers vs the str.strip / regex / float path).

Both are correctly rounded decimal-to-double conversions, so they must agree on every text the
number syntax accepts: special values, signs, exponents, subnormals, overflow, and 20,000
random decimals of 1-25 significant digits (a wrongly rounded converter differs on a sizeable
share of 17+ digit inputs). Texts the syntax refuses must be refused with the same message.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privatelr import cli

pytest.importorskip("pyarrow")

SPECIAL = ["1", "+1", "-1", ".5", "5.", "1e5", "1E+05", "1e-400", "1e400", "-0", "0", "inf",
           "-inf", "Inf", "INF", "+inf", "infinity", "Infinity", "-Infinity", "nan", "NaN",
           "00012", " 7 ", "\t8", "1.7976931348623157e308", "1.7976931348623159e308",
           "4.9e-324", "2.4703282292062328e-324", "2.2250738585072011e-308", "", "NA", " NA ",
           "123456789012345678901234567890", "0.1", "0.30000000000000004"]


def _random_decimals(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        digits = "".join(rng.choice(list("0123456789"), size=int(rng.integers(1, 26))))
        point = int(rng.integers(0, len(digits) + 1))
        text = digits[:point] + "." + digits[point:] if rng.uniform() < 0.7 else digits
        if rng.uniform() < 0.5:
            text += f"e{int(rng.integers(-330, 310))}"
        out.append(("-" if rng.uniform() < 0.3 else "") + text)
    return out


def _both(texts):
    frame = pd.DataFrame({"x": pd.Series(texts, dtype=str)})
    fast = cli._typed_columns(frame, {"x": "numeric"})["x"].to_numpy()
    slow_fn = cli._arrow_numbers
    try:
        cli._arrow_numbers = lambda column, missing: None
        slow = cli._typed_columns(frame, {"x": "numeric"})["x"].to_numpy()
    finally:
        cli._arrow_numbers = slow_fn
    return fast, slow


@pytest.mark.parametrize("texts", [SPECIAL, _random_decimals(20_000)], ids=["special", "random"])
def test_fast_and_python_paths_give_the_same_bits(texts):
    fast, slow = _both(texts)
    assert cli._arrow_numbers(pd.Series(texts, dtype=str),
                              np.zeros(len(texts), dtype=bool)) is not None
    same = (fast.view(np.int64) == slow.view(np.int64)) | (np.isnan(fast) & np.isnan(slow))
    assert same.all(), [t for t, s in zip(texts, same) if not s][:5]


@pytest.mark.parametrize("bad", ["1_0", "0x10", "abc", "1e", "--1", "1 2"])
def test_a_text_that_is_not_a_number_is_reported_the_same_way(bad):
    frame = pd.DataFrame({"x": pd.Series(["1", bad, "2"], dtype=str)})
    with pytest.raises(ValueError, match=r"column 'x', line 2: .* is not a number"):
        cli._typed_columns(frame, {"x": "numeric"})
