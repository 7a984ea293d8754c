"""Black-box audits of the front ends: dplr (intercept-aware), random projection, the WALR
release and tuning's selection — the fast versions of the rows of benchmarks/audit_all.py.

The cases are imported from that script so that the table in benchmarks/RESULTS.md and these
tests audit exactly the same mechanisms and neighbours.

Power (measured at these settings, fixed seeds). dplr on n = 5, record 0 moved x -> -x with its
label flipped: the correct fit's bound is 0 (its privacy loss on this pair is far below ε = 1,
as the worst-case analysis allows), the noise/10 variants reach 1.49 (intercept) and 1.16
(projection) with 600 runs, and no noise gives the deterministic-output bound 2.57 with 100
runs. WALR's Gaussian release at (1, 1e-5) audits at about 0.1 with 4000 runs (the δ-form
bound), its σ/10 variant at 3.3. Tuning's selection between two candidates whose best one flips
(errors (1, 2) vs (2, 1)) has true loss ε/2 = 0.5 and audits at 0.40; at 10ε it reaches 4.2.
Every assertion below therefore has a margin of at least 0.15 in ε at 95% confidence, with the
seed fixed.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import pytest

from privatelr import PrivacyWarning

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "audit_all.py"
_spec = importlib.util.spec_from_file_location("audit_all", _SCRIPT)
audit_all = importlib.util.module_from_spec(_spec)
sys.modules["audit_all"] = audit_all  # dataclasses look their module up while it executes
_spec.loader.exec_module(audit_all)

CASES = {c.name: c for c in (audit_all.dplr_cases() + [audit_all.walr_case(),
                                                       audit_all.tuning_case()])}


@pytest.mark.heavy
@pytest.mark.parametrize("name", list(CASES))
def test_front_end_audit(name):
    case = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        row = audit_all.run_case(case, quick=True, seed=20261122)
    res = row["result"]
    assert res.passed and res.eps_lower < case.eps, res.summary()
    for label, (bres, _) in row["broken"].items():
        assert not bres.passed and bres.eps_lower > case.eps + 0.15, (label, bres.summary())
