"""erm.fit / erm.calibrate with extreme or ill-typed arguments: a ValueError or TypeError that
names the argument, never ZeroDivisionError, a RuntimeWarning, an unnamed noise-sampler error
or a solver TypeError (found by tests/fuzz/test_fuzz_erm.py)."""

from __future__ import annotations

import numpy as np
import pytest

from privatelr import erm

X = np.array([[0.5, 0.1], [-0.3, 0.4], [0.2, -0.6], [-0.1, -0.2]])
Y = np.array([1, 0, 1, 0])


@pytest.mark.parametrize("kwargs, exc, pattern", [
    # before: ZeroDivisionError (eps/2 underflows to 0; n*lambda*eps underflows to 0)
    (dict(eps=5e-324), ValueError, r"eps=5e-324.*increase eps"),
    (dict(eps=5e-324, method="output"), ValueError, r"eps=5e-324"),
    (dict(eps=1e-320, method="output"), ValueError, r"eps=1e-320"),
    # before: ValueError "scale must be finite, got inf" (from the noise sampler)
    (dict(data_norm=1e308), ValueError, r"data_norm=1e\+308"),
    (dict(lambda_=5e-324, method="output"), ValueError, r"lambda_=5e-324"),
    (dict(weights=np.ones(4), weights_bound=1e308), ValueError, r"weights_bound=1e\+308"),
    # before: RuntimeWarning overflow in expm1 / in the Huber loss
    (dict(loss="huber", h=5e-324, eps=0.0), ValueError, r"h=5e-324"),
    # before: TypeError "can't multiply sequence by non-int" / "can only concatenate str"
    (dict(gtol="x"), TypeError, r"gtol must be a real number"),
    (dict(gtol=[1e-10]), TypeError, r"gtol"),
    (dict(gtol=float("nan")), ValueError, r"gtol must be a number"),
    (dict(gtol=-1.0), ValueError, r"gtol must be > 0"),
    (dict(gtol=0.0), ValueError, r"gtol must be > 0"),   # the solver can reach no zero gradient
    (dict(maxiter="3"), TypeError, r"maxiter must be an integer"),
    (dict(maxiter=2.5), TypeError, r"maxiter must be an integer"),
    (dict(maxiter=-1), ValueError, r"maxiter must be >= 1"),
    (dict(maxiter=0), ValueError, r"maxiter must be >= 1"),      # None is the default
    (dict(maxiter=True), TypeError, r"maxiter"),
])
def test_extreme_arguments_are_named(kwargs, exc, pattern):
    args = dict(lambda_=0.1, eps=1.0, random_state=0)
    args.update(kwargs)
    with pytest.raises(exc, match=pattern):
        erm.fit(X, Y, **args)


def test_regular_calibration_is_unchanged():
    cal = erm.calibrate(150, 5, eps=1.0, lambda_=0.01)
    assert (round(cal.penalty, 6), round(cal.eps_eff, 6), cal.status) == (0.308301, 0.691699, "ok")
    adj = erm.calibrate(10, 3, eps=0.1, lambda_=1e-4)
    assert adj.status == "adjusted lambda" and adj.lambda_ == 0.25 / (10 * np.expm1(0.1 / 4))
    assert adj.noise_scale == 2.0 / 0.05
    out = erm.calibrate(10, 3, eps=2.0, lambda_=0.5, method="output")
    assert out.noise_scale == 2.0 / (10 * 0.5 * 2.0)


def test_extreme_but_computable_values_still_fit():
    # a huge eps and lambda (also with a huge bound: the penalty stays far below eps) fit
    for kwargs in (dict(eps=1e308), dict(lambda_=1e308), dict(eps=1e308, data_norm=1e308,
                                                              clip=True),
                   dict(eps=1e-300, method="output")):
        args = dict(lambda_=0.1, eps=1.0, random_state=0)
        args.update(kwargs)
        res = erm.fit(X, Y, **args)
        assert np.isfinite(res.coef).all()
