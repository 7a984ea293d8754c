"""`privatelr demo` (README's quick start runs it) leads with private fits at sensible settings
(public bounds, the data_norm their map implies) next to the non-private fit, and shows what
privacy costs (issue 29: it used to open with a NOT PRIVATE compat fit and data_norm = 20)."""

import re
import subprocess
import sys

import pytest


@pytest.mark.heavy
def test_demo_leads_with_private_fits_and_shows_the_cost():
    out = subprocess.run([sys.executable, "-m", "privatelr.cli", "demo", "--seed", "1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert out.stderr == ""                      # no warning: nothing the demo does not explain
    lines = text.splitlines()
    # the first fit shown is private, with public bounds and the default data_norm (no
    # data_norm argument, no compat, no clip): the norm bound comes from the map
    call = next(line for line in lines if "dplr(" in line)
    assert "bounds=pb" in call and "data_norm" not in call and "compat" not in call
    assert "data_norm = 2" in text and "data_norm=20" not in text and "PrivateLR" not in text
    # the private columns come before the NOT PRIVATE one, on the same rows
    header = next(line for line in lines if "NOT PRIVATE" in line)
    assert header.index("private") < header.index("NOT PRIVATE")
    assert re.search(r"eps = 0\.5\s+eps = 1\s+eps = 2\s+eps = 5\s+eps = 0 \(glm\)", text)
    # what privacy costs: accuracy over many draws rises with eps towards glm's
    acc = next(line for line in lines if "accuracy, mean" in line).split()[2:]
    values = [float(v) for v in acc]
    assert len(values) == 5 and values[0] < values[3] < values[4] and values[4] > 0.95
    sd = next(line for line in lines if "accuracy, sd" in line).split()[2:]
    assert sd[-1] == "-" and all(float(v) > 0 for v in sd[:-1])    # the noise varies them
    # the eps = 1 fit's summary, in flags, then the same fit on the command line
    for label in (" Privacy level: 1 ", " Status: ok", "(Intercept)",
                  "refit with --inference", "--bounds Sepal.Length=0,10",
                  "--ledger budget.json --budget 2"):
        assert label in text, label
    assert "inference=True" not in text
