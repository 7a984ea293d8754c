"""The formula layer against R 4.2 (tests/fixtures/formula_semantics.json, copied from the shared
reference): ``model.matrix``'s columns and values for 51 formulas on a 12-row data frame, or R's
error, and R's outputs of a few scalar functions.

Every formula runs through the package's own design builder (``build_design``) as a
non-private build (``learn=True``: levels, ``cut(x, k)``'s breaks, ``scale()`` and ``poly()``
learned from the rows, as R learns them). Column names must be R's exactly; values agree to
1e-12 relative (R wrote 15 significant digits), ``poly()`` columns to 1e-9 (R's QR and the
package's three-term recurrence round differently); the kept rows and the offset are R's too.
R's errors must be ``ValueError`` carrying R's words. There is no deliberate difference in the
table: every entry is compared.

The frame: R's data frame held ``g``, ``h`` and ``s`` as factors (R's ``as.numeric(g)`` gives
their level codes and ``relevel(g, ...)`` accepts them, neither of which a character column
allows), with R's default levels (sorted); ``x`` is a double in R and arrives here as integers,
which are labelled as the doubles R holds (``1e+05``).
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privatelr.design import build_design, r_number

TABLE = json.loads((Path(__file__).parents[1] / "fixtures" / "formula_semantics.json").read_text())
CASES = TABLE["model_matrices"]
FUNCTIONS = TABLE["functions"]


def _r_frame() -> pd.DataFrame:
    df = pd.DataFrame(TABLE["data"])
    for col in ("g", "h", "s"):                     # R's factors, levels sorted
        df[col] = pd.Categorical(df[col], categories=sorted(set(df[col])))
    return df


def _r_values(values) -> np.ndarray:
    return np.array([[np.nan if v == "NA" else v for v in col] for col in values],
                    dtype=np.float64).T


def test_the_table_is_complete():
    assert len(CASES) == 51 and len(TABLE["data"]) == 12


@pytest.mark.parametrize("case", CASES, ids=[c["formula"] for c in CASES])
def test_model_matrix_as_r(case):
    df = _r_frame()
    if case.get("error"):
        with pytest.raises(ValueError, match=re.escape(case["error"])):
            build_design(case["formula"], df)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        d = build_design(case["formula"], df)
    columns = case["columns"] if isinstance(case["columns"], list) else [case["columns"]]
    assert d.spec.design_columns == columns
    assert (np.flatnonzero(d.complete) + 1).tolist() == case["rows"]
    want = _r_values(case["values"])
    assert d.X.shape == want.shape
    poly = "poly(" in case["formula"] and "raw = TRUE" not in case["formula"]
    for j, name in enumerate(columns):
        scale = np.abs(want[:, j]).max()
        np.testing.assert_allclose(d.X[:, j], want[:, j], rtol=1e-9 if poly else 1e-12,
                                   atol=(1e-9 if poly else 0.0) * scale, err_msg=name)
    offset = d.spec.rows(df).offset
    if case["offset"] is None:
        assert offset is None
    else:
        np.testing.assert_allclose(offset, case["offset"], rtol=1e-12)


# ---- R's scalar outputs ------------------------------------------------------------------------
#
# The table lists R's outputs without the calls that made them. Entries whose inputs are evident
# are checked; the others are named here with the reason, and what they show is checked on the
# model-matrix path above, on the table's own data.

NOT_RECONSTRUCTED = {
    "round_half": "the rounded inputs are not recorded (e.g. which input gave 1); R's round is "
                  "checked by I(round(a, 1)) and I(round(a)) on the data above",
    "signif": "inputs not recorded; R's signif is checked by I(signif(a, 2)) on the data above",
    "as_numeric": "the strings converted are not recorded (26 could be '26', ' 26 ' or '0x1A')",
    "ifelse_na": "the test vector is not recorded; ifelse() is checked on the data above and "
                 "its NA rule in tests/unit/test_formula_functions.py",
    "pmin_na": "the arguments are not recorded; pmin() is checked on the data above",
    "modulo": "the operands are not recorded; %% and %/% are checked by I(a %% 1) + I(b %/% 1)",
}


def test_every_function_entry_is_checked_or_named():
    checked = {"format_levels", "cut_labels_3", "cut_labels_dig"}
    assert set(FUNCTIONS) == checked | set(NOT_RECONSTRUCTED)


FORMAT_INPUTS = [0.1, 1 / 3, 1, 1e5, 123456, 1e15]       # as.character(c(0.1, 1/3, ...))


def test_format_levels():
    want = FUNCTIONS["format_levels"]
    assert [r_number(v) for v in FORMAT_INPUTS] == want
    # the same labels as factor levels learned from data, declared in levels= and declared in
    # the formula, and as column names
    df = pd.DataFrame({"v": FORMAT_INPUTS, "y": [0, 1, 0, 1, 0, 1]})
    learned = build_design("y ~ factor(v)", df).spec
    declared = build_design("y ~ factor(v)", df, levels={"v": FORMAT_INPUTS}, learn=False).spec
    # (R matches factor levels by label: 1/3 is the level written 0.333333333333333)
    literal = build_design("y ~ factor(v, levels = c(0.1, 0.333333333333333, 1, 1e5, 123456, "
                           "1e15))", df, learn=False)
    assert learned.atoms[0]["levels"] == declared.atoms[0]["levels"] == want
    assert literal.spec.atoms[0]["levels"] == want and literal.X.shape == (6, 6)
    assert learned.design_columns[1:] == [f"factor(v){lv}" for lv in want[1:]]


def test_cut_labels_on_the_table_b():
    d = build_design("y ~ cut(b, 3)", _r_frame())
    assert d.spec.atoms[0]["levels"] == FUNCTIONS["cut_labels_3"]


def test_cut_labels_with_a_small_break():
    df = pd.DataFrame({"v": [0.001, 5.0], "y": [0, 1]})
    d = build_design("y ~ cut(v, breaks = c(0, 0.00123, 10))", df, learn=False)
    assert d.spec.atoms[0]["levels"] == FUNCTIONS["cut_labels_dig"]
