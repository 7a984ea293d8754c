"""`privatelr demo` fits R's manual example with dplr and prints its R-style summary."""

import subprocess
import sys


def test_demo_prints_summary():
    out = subprocess.run([sys.executable, "-m", "privatelr.cli", "demo", "--seed", "1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Species ~ Sepal.Length + Sepal.Width + Petal.Length + Petal.Width" in text
    for label in (" Privacy level: 1", " Regularization parameter: 0.0325069441551098",
                  " Convergence of optimization : TRUE", " C-index (AUC):", " Status: ok",
                  "(Intercept)"):
        assert label in text
    assert "PrivacyWarning" in out.stderr          # R's calibration: the guarantee is void
    assert "NOT PRIVATE" in text and 'compat="PrivateLR"' in text
    assert "data_norm=20, clip=True" in text and "noise is as large as the signal" in text
