r"""Privacy–utility experiments: cross-validated test error and AUC of private fits against ε.

:func:`privacy_utility` runs the protocol of Chaudhuri & Monteleoni (NIPS 2008, Section 6): k-fold
cross-validation, and for every fold, privacy level and private method, ``repeats`` independent
noise draws ("random restarts") of the private fit on the training folds, each scored on the
held-out fold. The fits go through :func:`privatelr.erm.fit`, the same engine (and calibration)
users get; the non-private fit is computed once per fold (and training size).

When ``lambda_`` is not given, every fit uses the one default rule of the package,
:func:`privatelr.calibration.default_lambda` (as :func:`privatelr.dplr` and
:class:`privatelr.DPLogisticRegression` do): computed from the fit's own training size, its ε and
the design rows' norm bound B, so each ε of the grid gets its own λ (the non-private fits get
the rule's eps = 0 value, 0.001). The ``lambda`` column says which λ each fit used.

Randomness and parallelism
--------------------------
One Generator is built from ``random_state`` (:func:`privatelr.mechanisms.check_random_state`).
It shuffles the rows into folds and seeds one :class:`numpy.random.SeedSequence`; the sequence
spawns one independent child per repeat, and repeat ``r`` draws all its noise from its own
child. The result therefore does not depend on ``n_jobs`` (``n_jobs=1`` and ``n_jobs=2`` give
identical tables) and the repeats are statistically independent.

Privacy note
------------
This is an *evaluation* tool for data you are allowed to look at (simulations, public
benchmarks): the test errors and AUCs it returns are computed from the labels without noise and
are not private, and running many private fits on the same data composes their ε.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

from . import erm
from .calibration import default_lambda, norm_bound
from ._validation import as_float_matrix, check_bool, check_int, check_real
from .mechanisms import check_random_state
from .progress import progress_bar
from .report.roc import c_index

__all__ = ["privacy_utility", "COLUMNS"]

#: Columns of the table returned by :func:`privacy_utility`.
COLUMNS = ["method", "eps", "fold", "repeat", "n_train", "lambda", "error", "auc", "seconds"]

_METHODS = ("objective", "output", "nonprivate")


def _as_design(formula_or_X, data, y, data_norm: float):
    """(X with every column the model uses, 0/1 labels, norm bound B of the design rows)."""
    if isinstance(formula_or_X, str):
        if data is None:
            raise TypeError("privacy_utility(formula, data=...): data is required with a formula")
        if y is not None:
            raise TypeError("privacy_utility: pass y only with a matrix X, not with a formula")
        from .design import build_design

        design = build_design(formula_or_X, data)
        if design.n_classes > 2:
            raise ValueError(f"the response has {design.n_classes} classes; write a two-class "
                             "response, e.g. \"I(Species == 'setosa') ~ .\"")
        B = norm_bound(data_norm, design.spec.intercept)
        # the intercept column has norm 1, the covariates are bounded by data_norm
        return np.ascontiguousarray(design.X, dtype=np.float64), design.y.astype(np.int64), B
    if data is not None:
        raise TypeError("privacy_utility(X, y=...): data= is only for a formula; pass the labels "
                        "as y")
    if y is None:
        raise TypeError("privacy_utility(X, y=...): y (0/1, bool or -1/+1 labels) is required")
    X = as_float_matrix("X", formula_or_X)
    yv = np.asarray(y).reshape(-1)
    if yv.shape[0] != X.shape[0]:
        raise ValueError(f"y has {yv.shape[0]} labels but X has {X.shape[0]} rows; they must match")
    vals = set(np.unique(yv).tolist())
    if not (vals <= {0, 1} or vals <= {-1, 1} or yv.dtype == np.bool_):
        raise ValueError(f"y must hold two classes coded 0/1, bool or -1/+1, got values {sorted(vals)}")
    return X, (yv > 0).astype(np.int64), data_norm


def _check_methods(methods) -> tuple:
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(methods)
    if not methods:
        raise ValueError("methods is empty; choose from 'objective', 'output', 'nonprivate'")
    for m in methods:
        if m not in _METHODS:
            raise ValueError(f"methods must be among {_METHODS}, got {m!r}")
    return methods


def _check_grid(name: str, values, *, integer: bool = False) -> tuple:
    if np.isscalar(values):
        values = (values,)
    out: list = []
    for v in values:
        if integer:
            out.append(check_int(name, v, low=1))
        else:
            out.append(check_real(name, v, low=0.0, low_open=True))
    if not out:
        raise ValueError(f"{name} is empty")
    return tuple(out)


def _score(X: np.ndarray, y: np.ndarray, coef: np.ndarray) -> tuple[float, float]:
    margin = X @ coef
    error = float(np.mean((margin > 0) != (y == 1)))
    auc = c_index(margin, y) if 0 < y.sum() < y.size else float("nan")
    return error, auc


# Worker state: set once per process (the data are sent to each worker once, not per task).
_STATE: dict = {}


def _init_worker(state: dict) -> None:
    _STATE.clear()
    _STATE.update(state)


def _lambda(lambda_: float | None, n: int, eps: float, B: float) -> float:
    """The λ of one fit: the one given, else the package's default rule for these n, ε, B."""
    return default_lambda(n, eps, data_norm=B) if lambda_ is None else lambda_


def _run_repeat(task: tuple) -> list[tuple]:
    """All private fits of one repeat (every fold, size, ε and private method)."""
    r, seed = task
    s = _STATE
    rng = np.random.Generator(np.random.PCG64(seed))
    X, y, splits = s["X"], s["y"], s["splits"]
    rows = []
    for k, (train, test) in enumerate(splits):
        for n_tr in s["sizes"]:
            tr = train[:n_tr]
            for eps in s["eps_grid"]:
                for method in s["private"]:
                    t0 = time.perf_counter()
                    lam = _lambda(s["lambda_"], tr.size, eps, s["B"])
                    res = erm.fit(X[tr], y[tr], lambda_=lam, eps=eps, method=method,
                                  data_norm=s["B"], clip=s["clip"], random_state=rng)
                    err, auc = _score(X[test], y[test], res.coef)
                    rows.append((method, float(eps), k, r, int(tr.size), float(res.lambda_),
                                 err, auc, time.perf_counter() - t0))
    return rows


def privacy_utility(formula_or_X, data=None, y=None, *, eps_grid: Sequence[float] = (0.1, 0.3, 1.0, 3.0),
                    methods: Sequence[str] = ("objective", "output", "nonprivate"),
                    repeats: int = 20, folds: int = 5, lambda_: float | None = None,
                    n_train: int | Sequence[int] | None = None, data_norm: float = 1.0,
                    clip: bool = False, random_state=None, n_jobs: int = 1,
                    progress: bool | None = None) -> pd.DataFrame:
    """Cross-validated test error and AUC of private logistic regression over a grid of ε.

    Parameters
    ----------
    formula_or_X : str or (n, d) array
        An R formula (``"y ~ ."``, intercept as the formula says) with ``data``, or a design
        matrix used exactly as given (no intercept column is added — the NIPS 2008 designs have
        none) with labels ``y``.
    data : DataFrame, optional
        The data for a formula.
    y : (n,) array, optional
        Labels 0/1, bool or -1/+1 for a matrix.
    eps_grid : sequence of float
        Privacy levels ε > 0.
    methods : sequence of {"objective", "output", "nonprivate"}
        Objective perturbation (JMLR 2011 Algorithm 2, with the ε' correction), output
        perturbation (the NIPS 2008 "sensitivity method") and the non-private fit (once per
        fold and training size; rows have ``eps = inf`` and ``repeat = 0``).
    repeats : int
        Independent noise draws per fold, ε and private method (the paper's "random restarts").
    folds : int
        Number of cross-validation folds (>= 2).
    lambda_ : float, optional
        Regulariser of ``(λ/2)‖w‖²`` for every fit. Default: the package's one rule,
        :func:`privatelr.calibration.default_lambda`, per fit — ``c·B²/(n(exp(ε/20) − 1))``
        for that fit's training size ``n``, its ε and the design rows' bound ``B`` (the
        smallest λ whose objective-perturbation penalty is ε/10, as in :func:`privatelr.dplr`),
        and 0.001 for the non-private fits (the rule at eps = 0). Objective perturbation may
        still raise a given λ that leaves no budget (status ``adjusted lambda``); the
        ``lambda`` column holds the λ each fit used.
    n_train : int or sequence of int, optional
        Train on the first ``n_train`` rows of each fold's (shuffled) training part — one point
        of a learning curve per value. Default: the whole training part.
    data_norm : float
        Public bound on the covariate rows' L2 norm. With a formula and an intercept the design
        rows are bounded by ``sqrt(data_norm² + 1)`` (as in :func:`privatelr.dplr`).
    clip : bool
        Clip rows above the bound (else a :class:`~privatelr.PrivacyWarning` per fit).
    random_state : int, numpy.random.Generator or None
        Seeds the fold split and, through a SeedSequence, one child stream per repeat.
    n_jobs : int
        Worker processes for the repeats (``concurrent.futures.ProcessPoolExecutor``); the
        table is the same for every ``n_jobs``. -1 uses every CPU.
    progress : bool, optional
        Show a tqdm bar (tqdm is optional). Default: only when stderr is a terminal.

    Returns
    -------
    pandas.DataFrame
        One row per fit, columns :data:`COLUMNS`: ``method, eps, fold, repeat, n_train, lambda,
        error, auc, seconds`` (the λ the fit used; test error and AUC on the held-out fold;
        seconds of the fit and scoring). The folds' training parts differ by at most one row
        when ``folds`` does not divide ``n``, so ``n_train`` may differ by one between folds.

    Examples
    --------
    >>> from privatelr.datasets import make_sphere
    >>> X, y = make_sphere(600, 5, margin=0.05, random_state=0)
    >>> res = privacy_utility(X, y=y, eps_grid=[1.0], repeats=2, folds=3, lambda_=0.01,
    ...                       random_state=0)
    >>> list(res.columns)
    ['method', 'eps', 'fold', 'repeat', 'n_train', 'lambda', 'error', 'auc', 'seconds']
    >>> res.groupby("method").size().to_dict()
    {'nonprivate': 3, 'objective': 6, 'output': 6}
    """
    X, yy, B = _as_design(formula_or_X, data, y, check_real("data_norm", data_norm, low=0.0,
                                                             low_open=True))
    methods = _check_methods(methods)
    eps_grid = _check_grid("eps_grid", eps_grid)
    repeats = check_int("repeats", repeats, low=1)
    folds = check_int("folds", folds, low=2)
    n_jobs = check_int("n_jobs", n_jobs)
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be >= 1 or -1 (all CPUs), got {n_jobs}")
    check_bool("clip", clip)
    n = X.shape[0]
    if n < folds:
        raise ValueError(f"need at least folds = {folds} rows, got {n}")
    rng = check_random_state(random_state)

    perm = rng.permutation(n)
    parts = np.array_split(perm, folds)
    splits = [(np.concatenate(parts[:k] + parts[k + 1:]), parts[k]) for k in range(folds)]
    smallest = min(tr.size for tr, _ in splits)
    sizes: tuple
    if n_train is None:
        sizes = (None,)
    else:
        sizes = _check_grid("n_train", n_train, integer=True)
        if max(sizes) > smallest:
            raise ValueError(f"n_train must be <= {smallest}, the smallest training part of "
                             f"{folds}-fold cross-validation on {n} rows; got {max(sizes)}")
    if lambda_ is not None:
        lambda_ = check_real("lambda_", lambda_, low=0.0, low_open=True)
    root = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
    children = root.spawn(repeats)

    rows: list[tuple] = []
    if "nonprivate" in methods:
        for k, (train, test) in enumerate(splits):
            for s in sizes:
                tr = train if s is None else train[:s]
                t0 = time.perf_counter()
                res = erm.fit(X[tr], yy[tr], lambda_=_lambda(lambda_, tr.size, 0.0, B), eps=0.0)
                err, auc = _score(X[test], yy[test], res.coef)
                rows.append(("nonprivate", math.inf, k, 0, int(tr.size), float(res.lambda_),
                             err, auc, time.perf_counter() - t0))

    private = tuple(m for m in methods if m != "nonprivate")
    if private:
        # train[:n] with n past the end is the whole training part (folds differ by one row)
        state = dict(X=X, y=yy, splits=splits, eps_grid=eps_grid, private=private,
                     sizes=[n if s is None else s for s in sizes], lambda_=lambda_, B=B,
                     clip=bool(clip))
        tasks = [(r, child) for r, child in enumerate(children)]
        bar = progress_bar(repeats, desc="privacy_utility", unit="repeat", enabled=progress,
                           leave=True)
        try:
            if n_jobs == 1:
                _init_worker(state)
                for task in tasks:
                    rows.extend(_run_repeat(task))
                    if bar is not None:
                        bar.update(1)
            else:
                with ProcessPoolExecutor(max_workers=min(n_jobs, repeats),
                                         initializer=_init_worker, initargs=(state,)) as pool:
                    for out in pool.map(_run_repeat, tasks, chunksize=max(1, repeats // (4 * n_jobs))):
                        rows.extend(out)
                        if bar is not None:
                            bar.update(1)
        finally:
            _STATE.clear()
            if bar is not None:
                bar.close()
    table = pd.DataFrame(rows, columns=COLUMNS)
    order = {m: i for i, m in enumerate(methods)}
    table = table.sort_values(["method", "eps", "n_train", "fold", "repeat"],
                              key=lambda c: c.map(order) if c.name == "method" else c,
                              kind="stable").reset_index(drop=True)
    return table
