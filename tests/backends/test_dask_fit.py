"""erm.fit on Dask collections (privatelr.backends.dask) against the in-memory fit.

Parity tolerance. The Dask objective computes the same per-row quantities as the in-memory one;
only the order in which partial sums are added differs (partitions + tree sum versus 8 MB
chunks), a relative difference of about 1e-16 in f, g and H. Newton's method then takes the same
steps (same line-search decisions) and converges quadratically, so both runs end with gradients
near machine precision and coefficients that agree to ~1e-15; atol 1e-10 leaves a wide margin
while any real difference (noise drawn in another order, a wrong n, a missing partition, an
unweighted row) moves the coefficients by >= 1e-3 and fails. (L-BFGS is not tested here: its
path depends on rounding, so only the stopping rule ties the answers, and it needs ~100 passes.)

Every dataset is split into 8 partitions and fitted on a 2-process LocalCluster.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from privatelr import erm  # noqa: E402
from privatelr.accountant import PrivacyAccountant  # noqa: E402
from privatelr.backends.dask import DaskERMObjective  # noqa: E402
from privatelr.exceptions import BudgetExceededError, PrivacyWarning  # noqa: E402
from privatelr.losses import HuberLoss, LogisticLoss  # noqa: E402
from privatelr.objective import ERMObjective  # noqa: E402

N, D, PARTS = 4000, 6, 8


def _data(n=N, d=D, seed=0, scale=0.4):
    rng = np.random.default_rng(seed)
    X = np.c_[np.full(n, scale), rng.uniform(-scale, scale, size=(n, d - 1))]
    X /= max(1.0, np.linalg.norm(X, axis=1).max())  # rows inside the unit ball
    y = (X[:, 1] - X[:, 2] + 0.2 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def _dask(a, n=N):
    a = np.asarray(a)
    return da.from_array(a, chunks=(n // PARTS,) + a.shape[1:])


@pytest.mark.parametrize("kw", [
    dict(eps=1.0),
    dict(eps=0.0),
    dict(eps=1.0, method="output"),
    dict(eps=0.05),  # adjusted lambda
    dict(eps=1.0, loss="huber", h=0.3),
])
def test_dask_fit_equals_in_memory(client, kw):
    X, y = _data()
    mem = erm.fit(X, y, lambda_=0.01, random_state=7, **kw)
    dsk = erm.fit(_dask(X), _dask(y), lambda_=0.01, random_state=7, **kw)
    assert dsk.convergence == 0 and mem.convergence == 0
    np.testing.assert_allclose(dsk.coef, mem.coef, rtol=0, atol=1e-10)
    if mem.method == "nonprivate":
        assert abs(dsk.value - mem.value) <= 1e-12 * max(1.0, abs(mem.value))
    else:  # the objective value of a private fit is not released, on either backend
        assert np.isnan(dsk.value) and np.isnan(mem.value)
    for field in ("n", "d", "status", "method", "eps_eff", "penalty", "lambda_", "noise_scale",
                  "loss", "iterations"):
        assert getattr(dsk, field) == getattr(mem, field), field
    assert dsk.n == N
    # a different seed really changes a private fit: the comparison above has power
    if kw.get("eps", 0) not in (0, np.inf):
        other = erm.fit(X, y, lambda_=0.01, random_state=8, **kw)
        assert np.abs(other.coef - mem.coef).max() > 1e-3


def test_generator_sequence_shared(client):
    # one Generator passed to both paths draws the same noise when its state is the same
    X, y = _data()
    g1, g2 = np.random.default_rng(11), np.random.default_rng(11)
    a = erm.fit(X, y, lambda_=0.01, eps=0.5, random_state=g1)
    b = erm.fit(_dask(X), _dask(y), lambda_=0.01, eps=0.5, random_state=g2)
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-10)
    assert g1.random() == g2.random()  # both consumed the same number of draws


def test_weights_bool_pm1_numpy_labels_and_dataframe(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = _data(seed=1)
    w = np.random.default_rng(2).uniform(0, 2, N)
    mem = erm.fit(X, y, lambda_=0.01, eps=1.0, weights=w, weights_bound=2.0, random_state=3)
    # labels as Dask bool, Dask -1/+1 and NumPy 0/1; weights as Dask and as NumPy
    for yy, ww in ((_dask(y.astype(bool)), _dask(w)), (_dask(2.0 * y - 1), w), (y, _dask(w))):
        dsk = erm.fit(_dask(X), yy, lambda_=0.01, eps=1.0, weights=ww, weights_bound=2.0,
                      random_state=3)
        np.testing.assert_allclose(dsk.coef, mem.coef, rtol=0, atol=1e-10)
    assert dsk.weights_bound == 2.0
    # a Dask DataFrame of numeric columns and a Dask Series of labels (unknown chunk sizes
    # until counted)
    df = dd.from_pandas(pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]), npartitions=PARTS)
    ys = dd.from_pandas(pd.Series(y), npartitions=PARTS)
    dsk = erm.fit(df, ys, lambda_=0.01, eps=1.0, weights=w, weights_bound=2.0, random_state=3)
    np.testing.assert_allclose(dsk.coef, mem.coef, rtol=0, atol=1e-10)
    # unweighted must differ from weighted (the weights are really used)
    unw = erm.fit(X, y, lambda_=0.01, eps=1.0, random_state=3)
    assert np.abs(unw.coef - mem.coef).max() > 1e-3


def test_unknown_chunk_sizes(client):
    X, y = _data(seed=4)
    Xu = _dask(X)[_dask(np.ones(N, bool))]  # boolean indexing: chunk sizes become NaN
    assert np.isnan(Xu.chunks[0][0])
    mem = erm.fit(X, y, lambda_=0.02, eps=2.0, random_state=5)
    dsk = erm.fit(Xu, _dask(y), lambda_=0.02, eps=2.0, random_state=5)
    np.testing.assert_allclose(dsk.coef, mem.coef, rtol=0, atol=1e-10)


def test_norm_bound_clip_and_warning(client):
    X, y = _data(seed=5)
    X = X.copy()
    X[::97] *= 3.0  # 42 rows above the unit bound
    k = len(range(0, N, 97))
    mem = erm.fit(X, y, lambda_=0.01, eps=1.0, clip=True, random_state=1)
    dsk = erm.fit(_dask(X), _dask(y), lambda_=0.01, eps=1.0, clip=True, random_state=1)
    assert dsk.n_clipped == dsk.n_exceeding == mem.n_clipped == k
    np.testing.assert_allclose(dsk.coef, mem.coef, rtol=0, atol=1e-10)
    for data in ((_dask(X), _dask(y)), (X, y)):    # fail closed, the same message
        with pytest.raises(ValueError, match="rows of X have L2 norm above data_norm=1"):
            erm.fit(*data, lambda_=0.01, eps=1.0, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # non-private fits do not check the bound, as in memory
        erm.fit(_dask(X), _dask(y), lambda_=0.01, eps=0, random_state=1)


def test_bad_input_messages(client):
    X, y = _data()
    Xbad = X.copy()
    Xbad[[3, 2000], 1] = np.nan
    with pytest.raises(ValueError, match=r"X contains NaN or infinite values in 2 row"):
        erm.fit(_dask(Xbad), _dask(y), lambda_=0.01, eps=1.0)
    ybad = y.copy()
    ybad[5] = 2
    with pytest.raises(ValueError, match="y must be two-valued"):
        erm.fit(_dask(X), _dask(ybad), lambda_=0.01, eps=1.0)
    with pytest.raises(ValueError, match="y has 3999 labels but X has 4000 rows"):
        erm.fit(_dask(X), y[:-1], lambda_=0.01, eps=1.0)
    with pytest.raises(ValueError, match=r"weights must lie in \[0, weights_bound\]"):
        erm.fit(_dask(X), _dask(y), lambda_=0.01, eps=1.0, weights=_dask(np.full(N, 3.0)),
                weights_bound=2.0)
    with pytest.raises(ValueError, match="weights_bound"):
        erm.fit(_dask(X), _dask(y), lambda_=0.01, eps=1.0, weights=_dask(np.ones(N)))
    with pytest.raises(TypeError, match="X must hold numbers"):
        erm.fit(da.from_array(np.array([["a"]] * 8), chunks=(4, 1)), _dask(y[:8], 8),
                lambda_=0.01, eps=1.0)
    with pytest.raises(ValueError, match="lambda_ must be > 0"):
        erm.fit(_dask(X), _dask(y), lambda_=0.0, eps=1.0)


def test_accountant_is_charged(client):
    X, y = _data()
    acc = PrivacyAccountant(1.0)
    erm.fit(_dask(X), _dask(y), lambda_=0.01, eps=0.75, accountant=acc, random_state=0)
    assert acc.spent()[0] == pytest.approx(0.75)
    assert acc.ledger[-1].note == "objective perturbation, logistic loss"  # one pipeline
    with pytest.raises(BudgetExceededError, match="budget"):
        erm.fit(_dask(X), _dask(y), lambda_=0.01, eps=0.5, accountant=acc, random_state=0)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.25)])
def test_objective_pieces_match_in_memory(client, loss):
    # value, gradient and Hessian of one map-reduce equal the in-memory objective's at a point
    X, y = _data(seed=9)
    ypm = np.where(y == 1, 1.0, -1.0)
    w = np.random.default_rng(0).standard_normal(D)
    b = np.random.default_rng(1).standard_normal(D)
    a = np.random.default_rng(2).uniform(0, 1, N)
    mem = ERMObjective(X, ypm, loss, 0.03, noise=b, weights=a)
    dsk = DaskERMObjective(_dask(X), _dask(np.c_[ypm, a]), loss, 0.03, noise=b)
    fm, gm, Hm = mem.evaluate(w, True)
    fd, gd, Hd = dsk.evaluate(w, True)
    assert dsk.passes == 1 and Hd.shape == (D, D) and gd.shape == (D,)
    assert fd == pytest.approx(fm, rel=1e-13)
    np.testing.assert_allclose(gd, gm, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(Hd, Hm, rtol=1e-12, atol=1e-15)
    # the line search prepares t = 1 in the same pass: evaluate there is free
    p = -np.linalg.solve(Hd, gd)
    phi = dsk.line(w, p, True)
    assert dsk.passes == 2
    f1 = phi(1.0)
    assert dsk.evaluate(w + 1.0 * p, True)[0] == f1 and dsk.passes == 2
    assert phi(0.5) == pytest.approx(mem.value(w + 0.5 * p), rel=1e-13)
    assert dsk.passes == 3


def test_large_d_and_warm_start(client):
    # d >= 24: single-precision Hessian blocks, as in memory
    X, y = _data(n=2400, d=26, seed=12, scale=0.15)
    mem = erm.fit(X, y, lambda_=0.01, eps=1.0, random_state=2)
    dsk = erm.fit(_dask(X, 2400), _dask(y, 2400), lambda_=0.01, eps=1.0, random_state=2)
    np.testing.assert_allclose(dsk.coef, mem.coef, rtol=0, atol=1e-10)
    # n >= 100000: the solver warm-starts on a strided 1/16 subsample; same rows in both paths
    X, y = _data(n=100_000, d=4, seed=13)
    mem = erm.fit(X, y, lambda_=0.001, eps=1.0, random_state=2)
    dsk = erm.fit(_dask(X, 100_000), _dask(y, 100_000), lambda_=0.001, eps=1.0, random_state=2)
    assert "warm start" in mem.message and "warm start" in dsk.message
    np.testing.assert_allclose(dsk.coef, mem.coef, rtol=0, atol=1e-10)


def test_package_works_without_dask():
    code = ("import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None\n"
            "import numpy as np, privatelr\n"
            "from privatelr import erm\n"
            "X = np.c_[np.full(50, .5), np.linspace(-.5, .5, 50)]; y = X[:, 1] > 0\n"
            "print(erm.fit(X, y, lambda_=0.1, eps=1.0, random_state=0).convergence)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"
