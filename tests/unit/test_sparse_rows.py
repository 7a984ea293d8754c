"""scipy.sparse designs through erm.fit (privatelr.backends.sparse): the same release as the
dense design, bit for bit up to the rounding of the products (1e-12), for every method; the
same refusals; clipping and norms from the stored values only."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from privatelr import erm
from privatelr.backends.sparse import SparseRows


def _data(n=3000, d=60, density=0.05, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=seed, format="csr")
    X.data = rng.uniform(-1, 1, X.data.size)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.diags(0.9 / np.maximum(norms, 1.0)) @ X
    X = sp.hstack([sp.csr_matrix(np.full((n, 1), 0.4)), X], format="csr")
    w0 = rng.normal(size=d + 1) * 3
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ w0)))).astype(int)
    return X, y


@pytest.mark.parametrize("method, kw", [("objective", {}), ("output", {}),
                                        ("gaussian", {"delta": 1e-6}),
                                        ("amp", {"delta": 1e-6})])
def test_sparse_equals_dense(method, kw):
    X, y = _data()
    a = erm.fit(X, y, lambda_=1e-3, eps=1.0, method=method, random_state=3, **kw)
    b = erm.fit(X.toarray(), y, lambda_=1e-3, eps=1.0, method=method, random_state=3, **kw)
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-12)
    assert a.calibration == b.calibration


def test_weights_lbfgs_and_non_private():
    X, y = _data(seed=1)
    w = np.random.default_rng(2).uniform(0, 2, X.shape[0])
    # Newton: the same iterates up to rounding; L-BFGS: both stop within the relative gradient
    # 1e-10 of the same minimiser, along paths that rounding makes differ (agreement ~1e-9)
    for kw, tol in ((dict(eps=1.0, weights=w, weights_bound=2.0), 1e-12),
                    (dict(eps=0.0, solver="lbfgs"), 1e-8)):
        a = erm.fit(X, y, lambda_=1e-2, random_state=4, **kw)
        b = erm.fit(X.toarray(), y, lambda_=1e-2, random_state=4, **kw)
        np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=tol)


def test_norm_bound_clipping_and_refusals():
    X, y = _data(n=500, seed=3)
    big = X * 3.0
    with pytest.raises(ValueError, match="data_norm"):
        erm.fit(big, y, lambda_=0.01, eps=1.0)
    a = erm.fit(big, y, lambda_=0.01, eps=1.0, clip=True, random_state=0)
    b = erm.fit(big.toarray(), y, lambda_=0.01, eps=1.0, clip=True, random_state=0)
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-12)
    bad = X.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        erm.fit(bad, y, lambda_=0.01, eps=1.0)
    with pytest.raises(ValueError, match="sparse"):
        erm.fit(X, y, lambda_=0.0, eps=0.0)


def test_row_norms_at_extreme_scales():
    X = sp.csr_matrix(np.array([[3e200, 4e200, 0.0], [3e-200, 0.0, 4e-200], [0.0, 0.0, 0.0]]))
    rows = SparseRows(X, np.array([1, 0, 1]))
    s = rows.scan(bound=1.0)
    assert s.n_over == 1 and s.max_norm == pytest.approx(5e200) and s.too_large
    clipped = rows.clipped(1.0)
    np.testing.assert_allclose(clipped.matrix.toarray()[0], [0.6, 0.8, 0.0])


def test_walr_release_and_trainer_take_sparse_features():
    from privatelr import noisy_dot_product, walr_fit

    rng = np.random.default_rng(6)
    X = sp.random(2000, 30, density=0.1, random_state=6, format="csr")
    X = sp.hstack([sp.csr_matrix(np.ones((2000, 1))), X], format="csr")
    y = rng.integers(0, 2, 2000)
    rel = noisy_dot_product(X, y, eps=1.0, delta=1e-6, random_state=1)
    dense = noisy_dot_product(X.toarray(), y, eps=1.0, delta=1e-6, random_state=1)
    np.testing.assert_array_equal(rel.value, dense.value)
    a = walr_fit(X, rel, lambda_=1e-3, solver="newton")
    b = walr_fit(X.toarray(), rel, lambda_=1e-3, solver="newton")
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-12)


def test_hessian_free_newton_above_the_newton_limit():
    """d = 1500 > 1000: the sparse objective is solved by Newton-CG on Hessian-vector
    products, the dense one by Newton's method with the exact Hessian; both to a relative
    gradient of 1e-12."""
    X, y = _data(n=3000, d=1499, density=0.01, seed=7)
    with pytest.warns(UserWarning):
        a = erm.fit(X, y, lambda_=1e-4, eps=1.0, random_state=2, gtol=1e-12)
    assert a.solver == "hessian-free" and a.convergence == 0
    with pytest.warns(UserWarning):
        b = erm.fit(X.toarray(), y, lambda_=1e-4, eps=1.0, random_state=2, gtol=1e-12,
                    solver="newton")
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-8)


def test_sparse_passes_match_the_dense_objective_and_the_line_takes_cg_s_increment():
    # the sparse objective's pieces against the dense objective on the same rows: gradient,
    # Hessian-vector product, the Hessian's diagonal (CG's preconditioner), the line search's
    # gradient at the full step and its bound on phi's third derivative — and a line given
    # the margins' increment (from CG's products) is the line that computes it
    from privatelr.backends.sparse import SparseObjective
    from privatelr.losses import LogisticLoss
    from privatelr.objective import ERMObjective

    X, y = _data(n=2000, d=40, density=0.1, seed=5)
    ys = np.where(y == 1, 1.0, -1.0)
    a = np.random.default_rng(1).uniform(0, 2, X.shape[0])
    rng = np.random.default_rng(2)
    w, p, v = (rng.standard_normal(X.shape[1]) for _ in range(3))
    sp_obj = SparseObjective(X, ys, LogisticLoss(), 1e-3, weights=a)
    de_obj = ERMObjective(X.toarray(), ys, LogisticLoss(), 1e-3, weights=a)
    f, g, _ = de_obj.evaluate(w, False)
    H = de_obj.information(w) + 1e-3 * np.eye(X.shape[1])   # double precision throughout
    fs, gs, _ = sp_obj.evaluate(w, False)
    assert fs == pytest.approx(f, rel=1e-13)
    np.testing.assert_allclose(gs, g, rtol=1e-11, atol=1e-15)
    Hv, inc = sp_obj.hessp_and_increment(w, v)
    np.testing.assert_allclose(Hv, H @ v, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(inc, ys * (X @ v), rtol=1e-15)
    np.testing.assert_allclose(sp_obj.hessian_diagonal(w), np.diag(H), rtol=1e-11)
    phi_d, phi_s = de_obj.line(w, p, False), sp_obj.line(w, p, False)
    np.testing.assert_allclose(phi_s.gradient, phi_d.gradient, rtol=1e-11, atol=1e-15)
    assert phi_s.third == pytest.approx(phi_d.third, rel=1e-12)
    assert phi_s(0.5) == pytest.approx(phi_d(0.5), rel=1e-13)
    given = SparseObjective(X, ys, LogisticLoss(), 1e-3, weights=a)
    phi_g = given.line(w, p, False, increment=ys * (X @ p))
    assert given.passes == 2       # X @ w and X' r at w + p; X @ p not computed again
    np.testing.assert_array_equal(phi_g.gradient, phi_s.gradient)
    assert phi_g(0.3) == phi_s(0.3)


@pytest.mark.parametrize("preconditioned", [False, True])
def test_conjugate_gradients_solve_the_newton_system(preconditioned):
    # solver._cg (Hessian-free Newton's inner solver): to the relative residual asked for,
    # with and without the diagonal preconditioner, and the margins' increment of its answer
    # accumulated from its own products
    from privatelr.backends.sparse import SparseObjective
    from privatelr.losses import LogisticLoss
    from privatelr.solver import _cg

    X, y = _data(n=1500, d=30, density=0.2, seed=3)
    ys = np.where(y == 1, 1.0, -1.0)
    obj = SparseObjective(X, ys, LogisticLoss(), 1e-3)
    if not preconditioned:
        obj.hessian_diagonal = None
    w = np.random.default_rng(4).standard_normal(X.shape[1]) * 0.3
    _, g, H = obj.evaluate(w, True)
    counts = {"hessian": 0}
    p, u = _cg(obj, w, g, 1e-10, 500, counts)
    assert np.linalg.norm(H @ p + g) <= 1e-10 * np.linalg.norm(g) * 1.0001
    np.testing.assert_allclose(p, -np.linalg.solve(H, g), rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(u, ys * (X @ p), rtol=1e-9, atol=1e-12)
    assert 0 < counts["hessian"] <= X.shape[1] + 5
