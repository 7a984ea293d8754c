"""Parsing and expanding a formula is linear in its size (issue 27: quadratic before, a 240 KB
formula under the 1 MB limit ran for more than 40 s, and loading a model file re-parsed it).

No wall time is measured. The work is counted deterministically: the Python lines executed (in
privatelr and in every library it calls; a trace function counts them) while a formula of N
terms goes through ``make_spec`` and ``DesignSpec.from_dict`` (the model loader), for N = 400,
800 and 1200. A loop over the terms inside a loop over the terms counts quadratically many
lines, which the second difference of the counts measures (0 for a linear cost): it was 22% of
the first difference before this change (formulaic's expansion), 0.4% now. Work inside C (a
tuple copied whole to append one operand, as the old parser did) is not seen by a line count,
so a formula of 100,000 terms is also parsed, and one of 20,000 terms built and loaded: they
took 60 s and 190 s before, and take seconds now.
"""

from __future__ import annotations

import itertools
import string

import numpy as np
import pandas as pd

from formula_checks import lines_executed
from privatelr.design import DesignSpec, make_spec, parse

_NAMES = [a + b for a in string.ascii_letters for b in string.ascii_letters
          if a + b not in ("if", "in", "NA")]


def _formula(n_terms: int, n_names: int = 300) -> tuple[str, pd.DataFrame]:
    names = _NAMES[:n_names]
    pairs = itertools.islice(itertools.combinations(names, 2), n_terms)
    text = "y ~ " + " + ".join(f"{a}:{b}" for a, b in pairs)
    return text, pd.DataFrame({n: np.zeros(0) for n in names + ["y"]})


def _work(n_terms: int) -> int:
    text, frame = _formula(n_terms)

    def run():
        spec = make_spec(text, frame)
        assert len(spec.design_columns) == n_terms + 1
        assert DesignSpec.from_dict(spec.to_dict()) == spec

    return lines_executed(run)


def test_work_grows_linearly_with_the_number_of_terms():
    _work(20)                                       # one-off costs (imports, caches) first
    w1, w2, w3 = (_work(n) for n in (400, 800, 1200))
    # work(N) = a + b N + c N^2: the second difference 2 c (400)^2 is 0 for a linear cost;
    # it was 22% of the first difference before (formulaic's expansion), 0.4% now
    first, second = w2 - w1, w3 - 2 * w2 + w1
    assert first > 100 * 400, (w1, w2, w3)          # the count does see the terms
    assert abs(second) < 0.05 * first, (w1, w2, w3)


def test_a_formula_of_100000_terms_parses():
    text, _ = _formula(100_000, n_names=450)
    assert len(text) < 1_000_000
    tree = parse(text)
    assert len(tree.right.operands) == 100_000


def test_a_formula_of_20000_terms_is_built_and_loaded():
    text, frame = _formula(20_000)
    spec = make_spec(text, frame)
    assert len(spec.design_columns) == 20_001
    back = DesignSpec.from_dict(spec.to_dict())
    assert back.design_columns == spec.design_columns
