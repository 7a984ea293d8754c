"""Public defaults that the command line shows before anything heavy is loaded.

This module imports nothing: ``privatelr --help`` reads these numbers without numpy, scipy,
pandas or formulaic (``tests/unit/test_import_contract.py``).
"""

__all__ = ["DEFAULT_SHARE"]

#: The share of ε spent on the information matrix when ``inference=True``. A trade-off measured
#: by simulation: a smaller share leaves more ε for the coefficients, a larger one makes the
#: released information, and so the standard errors and the ridge correction, less noisy. At
#: n = 1e4, ε = 1, 3 covariates the intervals were 0.206 / 0.212 / 0.222 wide at shares
#: 0.1 / 0.25 / 0.4. On the health-records design (8 coefficients, ``benchmarks/
#: bench_coverage.py``, issue 28; 300 replications per cell) a quarter left the information
#: too noisy below n*eps of about 10,000: at n = 2e4, ε = 0.5 it was positive definite in 92 %
#: of fits and the intercept's coverage was 0.90; at n = 5000, ε = 1, 36 % and 0.83. With 0.4
#: (and :func:`privatelr.calibration.default_lambda_inference`) those cells gave intervals in
#: 100 % and 78 % of fits, covering 0.930 and 0.919, at about the same widths (3.38 against
#: 3.23 times glm's; 4.17 against 4.28), while where a quarter was already enough
#: (n = 2e4, ε = 1 or 2; n = 5e4, ε = 1) the intervals became 5-18 % wider (1.54 -> 1.82,
#: 1.14 -> 1.26, 1.22 -> 1.31 times glm's). Intervals that exist and cover were preferred.
DEFAULT_SHARE = 0.4
