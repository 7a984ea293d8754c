"""The ERM objective's derivatives and the Newton / L-BFGS solvers."""

import numpy as np
import pytest

from privatelr.losses import HuberLoss, LogisticLoss
from privatelr.objective import ERMObjective, model_rows
from privatelr.solver import lbfgs, minimize, newton


def _problem(n=300, d=6, seed=0, weights=False, noise=True, loss=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.where(rng.uniform(size=n) < 0.5, 1.0, -1.0)
    w = rng.uniform(0, 2, size=n) if weights else None
    b = rng.standard_normal(d) * 3 if noise else None
    return ERMObjective(X, y, loss or LogisticLoss(), 0.05, noise=b, weights=w)


@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.3)])
def test_gradient_and_hessian_match_finite_differences(weights, loss):
    obj = _problem(weights=weights, loss=loss)
    rng = np.random.default_rng(1)
    w = rng.standard_normal(obj.d)
    f, g, H = obj.evaluate(w, True)
    h = 1e-6
    E = np.eye(obj.d)
    g_fd = np.array([(obj.value(w + h * e) - obj.value(w - h * e)) / (2 * h) for e in E])
    np.testing.assert_allclose(g, g_fd, rtol=1e-6, atol=1e-8)
    H_fd = np.array([(obj.evaluate(w + h * e, False)[1] - obj.evaluate(w - h * e, False)[1]) / (2 * h)
                     for e in E])
    # Huber's generalised Hessian is exact away from the band edges (none within h of w here)
    np.testing.assert_allclose(H, H_fd, rtol=1e-5, atol=1e-6)


def test_line_search_restriction_is_exact():
    obj = _problem()
    rng = np.random.default_rng(2)
    w, p = rng.standard_normal(obj.d), rng.standard_normal(obj.d)
    phi = obj.line(w, p, True)
    for t in (1.0, 0.5, 0.1, 2.0):
        assert phi(t) == pytest.approx(obj.value(w + t * p), rel=1e-13)
    # the speculative evaluation at the full step equals a fresh one
    f1, g1, H1 = obj.evaluate(w + 1.0 * p, True)
    fresh = _problem()
    f2, g2, H2 = fresh.evaluate(w + 1.0 * p, True)
    assert f1 == pytest.approx(f2, rel=1e-14)
    np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(H1, H2, rtol=1e-12)


def test_float32_hessian_branch_matches_float64():
    # d >= 24 forms the Hessian in single precision; it must agree with the exact one closely
    rng = np.random.default_rng(3)
    n, d = 2000, 40
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.where(rng.uniform(size=n) < 0.5, 1.0, -1.0)
    obj = ERMObjective(X, y, LogisticLoss(), 0.01)
    w = rng.standard_normal(d)
    _, _, H = obj.evaluate(w, True)
    s = LogisticLoss().second_derivative(y * (X @ w)) / n
    H_exact = (X * s[:, None]).T @ X + 0.01 * np.eye(d)
    np.testing.assert_allclose(H, H_exact, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.3)])
def test_a_subsample_holds_contiguous_copies_and_its_hessian_is_the_rows_in_single_precision(
        loss):
    # the warm start's subsample (every k-th row) owns contiguous copies of its rows, labels,
    # weights and offsets (no strided reads in its passes); its Hessians are formed in single
    # precision, its value and gradient in double precision, exactly
    rng = np.random.default_rng(11)
    n, d, k = 3000, 8, 3
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.where(rng.uniform(size=n) < 0.5, 1.0, -1.0)
    a, o = rng.uniform(0.5, 2.0, n), rng.uniform(-0.5, 0.5, n)
    sub = ERMObjective(X, y, loss, 0.05, weights=a, offset=o).subsample(n // k)
    for arr in (sub.X, sub.y, sub.weights, sub.offset):
        assert arr.flags.c_contiguous and arr.base is None
    np.testing.assert_array_equal(sub.X, X[::k])
    w = rng.standard_normal(d)
    f, g, H = sub.evaluate(w, True)
    ref = ERMObjective(X[::k].copy(), y[::k].copy(), loss, 0.05, weights=a[::k].copy(),
                       offset=o[::k].copy())
    f_ref, g_ref, H_ref = ref.evaluate(w, True)   # d < 24: the full objective's f64 Hessian
    assert f == f_ref
    np.testing.assert_array_equal(g, g_ref)
    np.testing.assert_allclose(H, H_ref, rtol=2e-6, atol=1e-9)   # float32: ~1e-7 relative


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)])
def test_newton_and_lbfgs_agree_and_converge(loss):
    obj = _problem(n=500, d=8, loss=loss)
    a = newton(obj, np.zeros(obj.d))
    b = lbfgs(_problem(n=500, d=8, loss=loss), np.zeros(obj.d))
    assert a.convergence == 0 and b.convergence == 0, (a.message, b.message)
    np.testing.assert_allclose(a.x, b.x, atol=1e-7)
    _, g, _ = obj.evaluate(a.x, False)
    assert np.abs(g).max() <= 1e-10 * 1.0
    assert a.counts["gradient"] >= 1 and a.iterations < 50


def test_nonconvergence_is_reported():
    obj = _problem(n=500, d=8)
    rep = newton(obj, np.zeros(obj.d), maxiter=1)
    assert rep.convergence == 1
    assert "iteration limit" in rep.message


def test_minimize_dispatch_and_errors():
    obj = _problem(n=100, d=3)
    assert minimize(obj, np.zeros(3)).method == "newton"
    assert minimize(_problem(n=100, d=3), np.zeros(3), method="lbfgs").method == "lbfgs"
    assert minimize(_problem(n=100, d=3), np.zeros(3), newton_max_d=2).method == "lbfgs"
    with pytest.raises(ValueError, match="solver"):
        minimize(obj, np.zeros(3), method="bfgs")


def test_huge_margins_in_objective_do_not_overflow():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((50, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    obj = ERMObjective(X, y, LogisticLoss(), 1e-3)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        f, g, H = obj.evaluate(np.array([1e4, -1e4, 1e4]), True)
    assert np.isfinite(f) and np.isfinite(g).all() and np.isfinite(H).all()


def test_warm_start_on_subsamples_reaches_the_same_minimiser():
    # n large enough for the nested strided warm start; the answer must be the full data's
    rng = np.random.default_rng(7)
    n, d = 120_000, 5
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-X @ np.arange(1.0, d + 1))), 1.0, -1.0)
    b = rng.standard_normal(d)
    warm = minimize(ERMObjective(X, y, LogisticLoss(), 1e-4, noise=b), np.zeros(d))
    cold = minimize(ERMObjective(X, y, LogisticLoss(), 1e-4, noise=b), np.zeros(d),
                    warm_start=False)
    assert warm.levels >= 1 and "warm start" in warm.message
    assert warm.convergence == 0 and cold.convergence == 0
    np.testing.assert_allclose(warm.x, cold.x, rtol=1e-9, atol=1e-11)
    # the tolerance is relative to the full data's gradient at 0, as without the warm start
    # (the first full pass sums it), not to the subsample's estimate of it
    assert warm.grad_ref == pytest.approx(cold.grad_ref, rel=1e-12)


@pytest.mark.parametrize("weighted, offset", [(False, False), (True, True)])
def test_the_gradient_at_zero_comes_from_the_same_pass(weighted, offset):
    # evaluate(w, origin=True) sums the gradient at 0 in the pass at w: equal to a separate
    # evaluation at 0, with weights and offsets (l'(y o) per row), and the gradient at w
    # unchanged (to the rounding of a two-row product)
    rng = np.random.default_rng(11)
    n, d = 3000, 4
    X = rng.standard_normal((n, d))
    y = np.where(rng.uniform(size=n) < 0.4, 1.0, -1.0)
    kw = dict(noise=rng.standard_normal(d),
              weights=rng.uniform(0, 2, n) if weighted else None,
              offset=rng.standard_normal(n) if offset else None)
    w = rng.standard_normal(d) * 0.1
    obj = ERMObjective(X, y, LogisticLoss(), 0.01, **kw)
    _, g, _ = obj.evaluate(w, True, 4, origin=True)
    ref = ERMObjective(X, y, LogisticLoss(), 0.01, **kw)
    np.testing.assert_allclose(obj.gradient_at_zero, ref.evaluate(np.zeros(d), False)[1],
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g, ref.evaluate(w, False)[1], rtol=1e-12, atol=1e-15)


def test_secant_update_keeps_the_secant_equation_and_positive_definiteness():
    from privatelr.solver import _secant_update
    rng = np.random.default_rng(11)
    A = rng.standard_normal((6, 6))
    H = A @ A.T + np.eye(6)
    s = rng.standard_normal(6)
    T = rng.standard_normal((6, 6))
    y = (T @ T.T + np.eye(6)) @ s  # curvature of another SPD matrix along s
    B = _secant_update(H, s, y)
    np.testing.assert_allclose(B @ s, y, rtol=1e-12)  # BFGS: the model reproduces y along s
    np.testing.assert_allclose(B, B.T, atol=1e-12)
    assert np.linalg.eigvalsh(B).min() > 0
    # negative curvature (rounding noise, or a nonconvex surprise): Powell's damping keeps B
    # positive definite, and B s is the damped mix, not y
    B2 = _secant_update(H, s, -y)
    assert np.linalg.eigvalsh(B2).min() > 0
    assert not np.allclose(B2 @ s, -y)


@pytest.mark.parametrize("scale, refreshed", [(1.02, False), (3.0, True)])
def test_model_hessian_is_kept_when_good_and_replaced_when_poor(scale, refreshed):
    obj = _problem(n=2000, d=8, seed=3)
    exact = newton(obj, np.zeros(obj.d), gtol=1e-12)
    x0 = exact.x + 0.05
    H0 = obj.evaluate(x0, True)[2] * scale
    rep = newton(_problem(n=2000, d=8, seed=3), x0, gtol=1e-10, grad_ref=1.0, hessian0=H0)
    assert rep.convergence == 0
    np.testing.assert_allclose(rep.x, exact.x, rtol=1e-8, atol=1e-10)
    # a 2 % error contracts the gradient ~50-fold per step: the model (secant-corrected) is
    # kept; a 3x error contracts it only to 2/3 per step: an exact Hessian replaces it
    assert (rep.counts["hessian"] > 0) == refreshed


@pytest.mark.parametrize("d", [5, 30])
@pytest.mark.parametrize("weights, loss", [(False, LogisticLoss()), (True, HuberLoss(0.3))])
def test_model_hessian_is_the_sampled_rows_scaled_and_value_gradient_exact(d, weights, loss):
    obj = _problem(n=1000, d=d, seed=4, weights=weights, loss=loss)  # one chunk
    w = np.linspace(-1, 1, d)
    f, g, H = obj.evaluate(w, True)
    f3, g3, H3 = _problem(n=1000, d=d, seed=4, weights=weights, loss=loss).evaluate(w, True, 3)
    assert f3 == f and np.array_equal(g3, g)  # the same pass, only the Hessian is a model
    # the sample: the first 64 of every 192 rows (5 full periods, then 40 of the last 40 rows)
    rows = np.flatnonzero(np.arange(1000) % 192 < 64)
    assert rows.size == 360
    X, y, a = obj.X[rows], obj.y[rows], (obj.weights[rows] if weights else 1.0)
    curv = loss.second_derivative(y * (X @ w)) * a * (1000 / 360) / obj.n
    # formed in single precision at every d: a model's sampling error dwarfs float32's
    np.testing.assert_allclose(H3, X.T @ (curv[:, None] * X) + 0.05 * np.eye(d), rtol=1e-5,
                               atol=1e-5 * np.abs(H).max())
    assert obj.evaluate(w, True, 1)[2] is not None  # stride 1: the exact Hessian again


def test_model_rows_are_runs_spread_over_the_chunk_in_one_casting_copy():
    a = np.arange(1000.0).reshape(500, 2)
    s = model_rows(a, 4, np.float32)
    assert s.dtype == np.float32 and s.flags.c_contiguous
    picked = np.flatnonzero(np.arange(500) % 256 < 64)   # 64 rows of each 256, and 64 of 244
    np.testing.assert_array_equal(s, a[picked].astype(np.float32))
    assert model_rows(a[:10], 4).shape == (10, 2)         # under one run: every row
    np.testing.assert_array_equal(model_rows(np.arange(10), 2, run=2), [0, 1, 4, 5, 8, 9])


def test_warm_start_models_the_hessian_on_a_third_of_the_rows_and_records_the_work():
    rng = np.random.default_rng(8)
    n, d = 160_000, 4
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-X @ np.arange(1.0, d + 1))), 1.0, -1.0)
    obj = ERMObjective(X, y, LogisticLoss(), 1e-4)
    rep = minimize(obj, np.zeros(d))
    assert rep.convergence == 0 and rep.levels == 1 and rep.counts["hessian"] == 0
    # the work: every full pass, plus the 1/16 subsample's passes by their share of the rows;
    # Hessians: the model (a third of a pass) and a few of the subsample's (1/16 each)
    work = rep.work
    assert rep.passes < work["gradient"] + work["hessian"] < rep.passes + 1
    assert 1 / 3 + 1 / 16 <= work["hessian"] < 0.75
    assert work["copy"] == pytest.approx(1 / 16, rel=1e-3)
    exact = newton(ERMObjective(X, y, LogisticLoss(), 1e-4), np.zeros(d))
    np.testing.assert_allclose(rep.x, exact.x, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("seed", range(6))
def test_a_step_certified_without_values_passes_armijo_on_the_values(seed):
    # solver._accept_on_gradient: the trapezoid bound on phi(1) - phi(0) (slope, the gradient
    # at the full step, the line pass's bound on phi''') certifies Armijo's test; here the
    # values are computed and must agree whenever the certificate says yes — on steps that are
    # good (Newton), scaled up to overshoot (which the certificate must refuse) and in between
    from privatelr.solver import _ARMIJO, _accept_on_gradient

    obj = _problem(n=2000, d=5, seed=seed, weights=seed % 2 == 1)
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(obj.d) * 0.5
    f, g, H = obj.evaluate(w, True)
    newton_step = -np.linalg.solve(H, g)
    said = []
    for scale in (0.3, 1.0, 1.5, 2.2, 4.0, 10.0):
        p = scale * newton_step
        phi = obj.line(w, p, False)
        slope = float(g @ p)
        ok = _accept_on_gradient(phi, p, slope, float(np.abs(g).max()))
        said.append(ok)
        if ok:
            assert phi(1.0) <= obj.value(w) + _ARMIJO * slope
    assert said[1] and not said[-1]          # the Newton step passes, a 10x overshoot does not


def test_lazy_values_give_the_same_minimiser_and_no_value_is_computed():
    # Newton's steps accepted on the certificate: no objective value computed at all in this
    # fit (each would cost a logarithm and an exponential a row); the minimiser is the one the
    # value-based line search finds
    class Eager:                     # the same objective, without lazy values
        def __init__(self, obj):
            self.obj, self.n, self.d = obj, obj.n, obj.d

        def evaluate(self, w, hessian=True):
            return self.obj.evaluate(w, hessian)

        def line(self, w, p, hessian=True):
            phi = self.obj.line(w, p, hessian)
            return lambda t: phi(t)

    lazy = _problem(n=5000, d=8, seed=3)
    rep = newton(lazy, np.zeros(8), value=False)
    eager = newton(Eager(_problem(n=5000, d=8, seed=3)), np.zeros(8))
    assert rep.convergence == 0 and eager.convergence == 0
    assert rep.counts["function"] == 0 and eager.counts["function"] > 0
    assert np.isnan(rep.value) and np.isfinite(eager.value)
    np.testing.assert_allclose(rep.x, eager.x, rtol=1e-9, atol=1e-12)
    assert newton(_problem(n=5000, d=8, seed=3), np.zeros(8)).value == pytest.approx(
        eager.value, rel=1e-14)
