r"""Private hyperparameter selection.

Choosing the regulariser by looking at validation error on the training data leaks information
that the guarantee of the fitted coefficients does not cover. Two private ways are offered
(``selection=``):

* ``"split"`` (Chaudhuri, Monteleoni & Sarwate, JMLR 2011, Section 6, Algorithm 4; R's DPpack
  ``tune_classification_model``; the default, for parity) spends the *same* ε: train each of
  the ``m`` candidates on its own disjoint slice of the rows, count the errors of every
  candidate on one more disjoint slice, and choose with the exponential mechanism. Each
  candidate sees ``n/(m+1)`` rows.
* ``"random_stopping"`` (Liu & Talwar, STOC 2019; :func:`privatelr.mechanisms.random_stopping`)
  fits every run on **all** ``n`` rows: a run draws a candidate uniformly, fits it with
  ``(1 - score_share) ε/3`` and scores it by its training errors released with the Laplace
  mechanism at ``score_share · ε/3`` (a count of sensitivity 1: replacing a row changes only
  that row's error), so each run is ε/3-DP by sequential composition; after each run the
  procedure stops with probability ``stop_prob`` and releases the best-scored run, which is
  ε-DP (3 · ε/3, Liu & Talwar). At ``m = 10`` a candidate's noise is about ``3/(1 -
  score_share) = 4`` times that of one full-data fit at ε, against ``m + 1 = 11`` times with
  the split.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import sys
import warnings
from collections.abc import Sequence

import numpy as np

import pandas as pd

from ._validation import check_bool, check_real, is_sparse
from .accountant import require_budget
from .mechanisms import check_random_state, exponential_mechanism, laplace_count, random_stopping
from .results import TuningRecord
from .backends import as_rows, compute, is_dask
from .scoring import outputs
from .models import CMSModel, as_01_labels, column_bounds

__all__ = ["tune_classification_model", "dplr_tune", "TuningRecord", "dppack_split"]

SELECTIONS = ("split", "random_stopping")
#: Random stopping: the share of each run's ε spent on its noisy score.
SCORE_SHARE = 0.25


def _check_selection(selection, stop_prob, score_share, m: int) -> tuple[float, float]:
    """``(stop_prob, score_share)`` checked; the default ``stop_prob`` is ``1/(2m)`` (about
    ``2m`` runs, each candidate tried at least once with probability about ``1 - e^{-2}``)."""
    if not isinstance(selection, str) or selection not in SELECTIONS:
        raise ValueError(f"selection must be 'split' or 'random_stopping', got {selection!r}")
    if selection == "split":
        if stop_prob is not None:
            raise ValueError("stop_prob is for selection='random_stopping'; drop it")
        return 0.0, 0.0
    stop = 1.0 / (2 * m) if stop_prob is None else check_real(
        "stop_prob", stop_prob, low=0.0, high=1.0, low_open=True)
    share = check_real("score_share", score_share, low=0.0, high=1.0, low_open=True,
                       high_open=True)
    return stop, share


def _stopping_budget(eps: float, share: float) -> tuple[float, float]:
    """Each run's ``(fit ε, score ε)``: ε/3 per run (Liu & Talwar's 3ε), split by ``share``;
    a non-private ``eps`` (0 or inf) stays as it is for the fits, and the scores are exact."""
    if eps == 0 or np.isinf(eps):
        return eps, np.inf
    return eps / 3.0 * (1.0 - share), eps / 3.0 * share


def _select_by_stopping(fit_run, errors_of, m: int, eps: float, stop_prob: float,
                        score_share: float, rng):
    """Random stopping over ``fit_run(j, eps_fit)`` scored by ``-(errors_of(fit) + Lap)``;
    returns ``(j, fit)``. Only the chosen fit leaves this function — and nothing that would
    count the runs (:func:`privatelr.mechanisms.random_stopping`): what a run prints (its
    ``verbose`` lines) and the warnings it raises are held back, and only the chosen run's are
    shown, once the selection is made."""
    eps_fit, eps_score = _stopping_budget(eps, score_share)

    def run(j):
        with _held() as said:
            fit = fit_run(j, eps_fit)
            score = -laplace_count(errors_of(fit), eps_score, rng)
        return score, (fit, said)
    j, (fit, said), _ = random_stopping(run, m, stop_prob, rng)
    said.replay()
    return j, fit


class _Said:
    """What one run printed and warned, to be shown later (or never)."""

    def __init__(self):
        self.text = io.StringIO()
        self.warnings = []

    def replay(self) -> None:
        sys.stdout.write(self.text.getvalue())
        for w in self.warnings:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


@contextlib.contextmanager
def _held():
    said = _Said()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(said.text):
        warnings.simplefilter("always")
        yield said
    said.warnings = list(caught)


def dppack_split(n: int, m: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Split ``n`` row positions into ``m`` training groups and one validation group.

    Position ``i`` (0-based) goes to group ``i mod (m+1)``: training group ``j`` holds rows
    ``j, j+m+1, j+2(m+1), …`` and the validation group holds rows ``m, 2m+1, …`` — DPpack's
    indexing (R's ``seq(j, n, m+1)``, 1-based). The split uses positions only, never values;
    **the rows must be in random order** (shuffle them first) for the groups to be
    representative.

    Examples
    --------
    >>> train, valid = dppack_split(10, 2)
    >>> [g.tolist() for g in train], valid.tolist()
    ([[0, 3, 6, 9], [1, 4, 7]], [2, 5, 8])
    """
    if n < m + 1:
        raise ValueError(f"need at least m + 1 = {m + 1} rows to give every one of the {m} "
                         f"candidates and the validation group a row, got {n}")
    idx = np.arange(n)
    train = [idx[j::m + 1] for j in range(m)]
    return train, idx[m::m + 1]


def tune_classification_model(models: Sequence, X, y, upper_bounds=None, lower_bounds=None,
                              add_bias: bool = False, weights=None,
                              weights_upper_bound: float | None = None, random_state=None,
                              accountant=None, selection: str = "split",
                              stop_prob: float | None = None, score_share: float = SCORE_SHARE):
    r"""Choose among DPpack-style models privately; returns the chosen, fitted model.

    With ``m`` models the rows are split by position into ``m + 1`` groups
    (:func:`dppack_split`; **shuffle the rows first**): model ``j`` is fitted on group ``j``
    with its own ε, every model predicts the last (validation) group, ``z_j`` counts its
    errors, and the exponential mechanism with utility :math:`-z_j` and sensitivity 1 picks
    model ``j`` with probability :math:`\propto \exp(-\varepsilon z_j / 2)` at the models'
    common ε.

    Unlike DPpack, the candidates are fitted as **copies**: only the chosen model object is
    updated, at the end, with its fit and a ``tuning_`` attribute (:class:`TuningRecord`), and
    returned; the other objects in ``models`` are left as they were (unfitted), so the
    procedure releases one model. If anything fails midway (a fit raises, an interrupt), none
    of the caller's objects has been touched — no private coefficients are left behind.

    **Accounting.** With an ``accountant``, ``eps`` is charged once, after the arguments are
    checked and **before** the first candidate is fitted. The charge stays spent if the
    procedure fails afterwards: the data were already read.

    **Privacy** (JMLR11 Theorem 18; neighbouring data sets have the same ``n`` and differ in
    one row, so the positional groups are the same for both). The groups are disjoint, so the
    differing row lies in exactly one of them.

    * In training group ``j``: only model ``j``'s input changes, and its coefficients are
      ε-differentially private; the other models and the validation rows are unchanged, and
      the choice is a randomised function of the models and the validation rows alone
      (post-processing). The released pair (choice, chosen model) is therefore ε-DP.
    * In the validation group: the models do not depend on it; each error count :math:`z_j`
      changes by at most 1, so the utilities :math:`-z_j` have sensitivity 1 and the
      exponential mechanism is ε-DP (McSherry & Talwar 2007, Theorem 6).

    Either way the output is ε-differentially private — parallel composition over the disjoint
    groups, not sequential composition, so ε is not multiplied by ``m``. The error counts
    themselves are not private and are not returned. With ``eps = inf`` the model with fewest
    errors is returned (ties broken at random) and nothing is private. Candidates with Gaussian
    noise (``"gaussian"``/``"amp"``, all with the same ``delta``) are (ε, δ)-DP, and so is the
    selection (the same two cases), charged ``(eps, delta)``; random stopping is offered for
    ε-DP candidates only.

    **DPLogisticRegression candidates** (:class:`privatelr.sklearn.DPLogisticRegression`, e.g.
    one per ``alpha``) are fitted as themselves: candidate ``j`` is a clone fitted on group
    ``j`` with its own public ``data_norm``, ``clip``, declared ``classes`` and
    ``sample_weight_bound`` (ε-DP by the estimator's contract), and an error is a validation
    row whose label differs from the candidate's ``predict`` — decided row by row, so the proof
    above holds unchanged. Every candidate's own checks run on all the rows before the charge
    (:meth:`~privatelr.sklearn.DPLogisticRegression.check_fit`); ``upper_bounds``,
    ``lower_bounds``, ``add_bias`` and ``weights_upper_bound`` are DPpack's and are refused for
    them (``weights`` are passed as ``sample_weight``). The candidates' accountants are not
    charged per fit: the one ledger (``accountant=``, or the candidates' common accountant) is
    charged ``eps`` once. The chosen estimator is returned fitted, with its own parameters
    (``random_state``, ``accountant``) as the caller set them and ``tuning_``; use it like any
    fitted ``DPLogisticRegression``. A ``eps=0`` candidate is a non-private fit. In-memory data
    only (Dask data: tune DPpack-style candidates).

    Parameters
    ----------
    models : sequence of LogisticRegressionDP or SVMDP, or of DPLogisticRegression
        The candidates (e.g. one per ``gamma``, or per ``alpha``), all built with the same
        ``eps``; one kind per call.
    X : (n, p) array or DataFrame
        Data, rows in random order.
    y : (n,) array
        Labels 0/1 (or the declared ``classes`` of ``DPLogisticRegression`` candidates).
    upper_bounds, lower_bounds : (p,) array
        Public column bounds (see :class:`privatelr.LogisticRegressionDP`); required for
        DPpack-style candidates, None for ``DPLogisticRegression`` ones.
    add_bias : bool
        Passed to every ``fit`` and ``predict``.
    weights : (n,) array, optional
        Observation weights (split with the rows); need ``weights_upper_bound``.
    weights_upper_bound : float, optional
    random_state : int, numpy.random.Generator or None
        One Generator drives every fit and the exponential mechanism.
    accountant : privatelr.PrivacyAccountant, optional
        Charged ``eps`` once for the whole procedure (parallel composition): checked before
        the data are read, spent before the first candidate is fitted (and not refunded if a
        fit then fails).
    selection : {"split", "random_stopping"}
        DPpack's disjoint groups (above), or Liu & Talwar's random stopping (module
        docstring): every run fits a copy of a uniformly drawn candidate on **all** rows at
        ``(1 - score_share) eps/3`` (its ``eps`` is set to that for the fit), scores it by
        its training errors plus Laplace noise at ``score_share * eps/3``, and the best-scored
        run of a geometric number of runs is released: ε-DP in total.
    stop_prob : float, optional
        Random stopping's stopping probability (default ``1/(2m)``).
    score_share : float
        Random stopping: the share of each run's ε spent on its score.

    Returns
    -------
    LogisticRegressionDP, SVMDP or DPLogisticRegression
        The chosen object of ``models`` (the same object), fitted on its group only (with
        random stopping: on all rows, with ``eps`` the run's fitting ε).

    Raises
    ------
    ValueError
        Empty ``models``, different ε among the models, fewer than ``m + 1`` rows, or invalid
        data, labels, bounds or weights (all checked before the accountant is charged).

    Notes
    -----
    Which classifier when: :func:`privatelr.dplr` is the port of R's PrivateLR (formulas, data
    frames; its private tuning is :func:`dplr_tune`); :class:`privatelr.sklearn.
    DPLogisticRegression` is for scikit-learn pipelines and numpy arrays (tune it here, not
    with ``GridSearchCV``, which spends ε per fit); :class:`privatelr.LogisticRegressionDP` is
    for DPpack parity and is what this function was written for.

    Examples
    --------
    >>> import numpy as np
    >>> from privatelr import SVMDP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(600, 2))
    >>> y = (X[:, 0] - X[:, 1] > 0).astype(int)
    >>> models = [SVMDP(eps=1.0, gamma=g, perturbation_method="output") for g in (100, 1, 1e-4)]
    >>> best = tune_classification_model(models, X, y, [1, 1], [-1, -1], random_state=0)
    >>> best.gamma in (100, 1, 1e-4), best.tuning_.chosen in (0, 1, 2)
    (True, True)

    The same selection over scikit-learn estimators (rows inside the unit ball):

    >>> from privatelr.sklearn import DPLogisticRegression
    >>> cands = [DPLogisticRegression(eps=1.0, alpha=a) for a in (0.1, 1.0, 10.0)]
    >>> best = tune_classification_model(cands, X / np.sqrt(2), y, random_state=0)
    >>> best.tuning_.candidates, best.predict(X[:2] / np.sqrt(2)).shape
    ((0.1, 1.0, 10.0), (2,))
    """
    estimator_type = _estimator_type()
    kinds = (CMSModel,) if estimator_type is None else (CMSModel, estimator_type)
    if isinstance(models, kinds + (str, bytes)) or not hasattr(models, "__iter__"):
        raise TypeError("models must be a list of LogisticRegressionDP / SVMDP or "
                        f"DPLogisticRegression objects, got {type(models).__name__}")
    models = list(models)
    if not models:
        raise ValueError("models is empty: give at least one candidate model")
    for i, mdl in enumerate(models):
        if not isinstance(mdl, kinds):
            raise TypeError(f"models[{i}] is a {type(mdl).__name__}; expected LogisticRegressionDP, "
                            "SVMDP or privatelr.sklearn.DPLogisticRegression")
    n_estimators = sum(not isinstance(mdl, CMSModel) for mdl in models)
    if 0 < n_estimators < len(models):
        raise TypeError("models mixes DPpack-style models (LogisticRegressionDP / SVMDP) with "
                        "DPLogisticRegression estimators; tune one kind at a time")
    if len({id(mdl) for mdl in models}) != len(models):
        raise ValueError("models contains the same object twice; build one object per candidate")
    eps_all = [mdl.eps for mdl in models]
    if any(e != eps_all[0] for e in eps_all):
        raise ValueError(f"all models must share one eps (the tuned model is eps-DP for that "
                         f"eps), got {eps_all}")
    eps = eps_all[0]
    deltas = {float(getattr(mdl, "delta", 0.0)) for mdl in models}
    if len(deltas) > 1:
        raise ValueError(f"all models must share one delta, got {sorted(deltas)}")
    delta = deltas.pop()
    stop_prob, score_share = _check_selection(selection, stop_prob, score_share, len(models))
    if delta and selection == "random_stopping":
        raise ValueError("selection='random_stopping' is proved for eps-DP candidates (Liu & "
                         "Talwar's 3 eps); the candidates use Gaussian noise (delta > 0): use "
                         "selection='split', or candidates with method 'objective'/'output'")
    if n_estimators:
        return _tune_estimators(models, X, y, eps, upper_bounds=upper_bounds,
                                lower_bounds=lower_bounds, add_bias=add_bias, weights=weights,
                                weights_upper_bound=weights_upper_bound,
                                random_state=random_state, accountant=accountant,
                                selection=selection, stop_prob=stop_prob,
                                score_share=score_share, delta=delta)
    if upper_bounds is None or lower_bounds is None:
        raise ValueError("upper_bounds and lower_bounds are required for LogisticRegressionDP / "
                         "SVMDP candidates: public bounds on every column of X")
    if accountant is not None:  # one spend of eps: parallel composition over disjoint groups
        require_budget(accountant, eps, delta)

    # every argument is checked here, before the accountant is charged and before any fit
    source = as_rows(X)          # in memory or on Dask (then every fit runs partition-wise)
    source.scan()                # finite values, before any charge
    Xa = source.matrix if is_sparse(X) else source.X       # a sparse X stays sparse (CSR)
    n, p = source.n, source.d
    if is_dask(y):
        ya = y
    else:
        ya = y.to_numpy() if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray) \
            else np.asarray(y)
        if ya.ndim == 2 and 1 in ya.shape:
            ya = ya.reshape(-1)
        if ya.ndim != 1 or ya.shape[0] != n:
            raise ValueError(f"y must be a vector with one label per row of X ({n}), got shape "
                             f"{np.shape(y)}")
    ya = as_01_labels(ya, n)
    upper, lower = column_bounds(upper_bounds, lower_bounds, p)
    add_bias = check_bool("add_bias", add_bias)
    wa = weights if weights is None or is_dask(weights) else _weight_vector(weights, n)
    wa, _ = CMSModel._weights(wa, weights_upper_bound, n)
    m = len(models)
    rng = check_random_state(random_state)
    if selection == "random_stopping":
        if accountant is not None:
            accountant.spend(eps, note=f"tune_classification_model over {m} candidates "
                             "(random stopping, Liu & Talwar: 3 x eps/3)")

        def fit_run(j, eps_fit):
            cand = copy.deepcopy(models[j])
            cand.eps = eps_fit
            return cand.fit(Xa, ya, upper, lower, add_bias=bool(add_bias), weights=wa,
                            weights_upper_bound=weights_upper_bound, random_state=rng)

        def errors_of(cand):
            return compute(np.count_nonzero(cand.predict(Xa, add_bias=bool(add_bias)) != ya))[0]

        chosen, fit = _select_by_stopping(fit_run, errors_of, m, eps, stop_prob, score_share,
                                          rng)
        best = models[chosen]
        best.__dict__.update(fit.__dict__)
        best.tuning_ = TuningRecord(candidates=tuple(mdl.gamma for mdl in models),
                                    chosen=chosen, eps=eps, group_sizes=(n,),
                                    selection=selection)
        return best
    train, valid = dppack_split(n, m)

    if accountant is not None:  # charged before any candidate touches the data; not refunded
        accountant.spend(eps, delta, note=f"tune_classification_model over {m} candidates "
                         "(disjoint groups + exponential mechanism)")
    # fit copies: the caller's objects stay untouched until the choice is made
    fitted: list = []
    errors = np.empty(m)
    y_valid = ya[valid]
    for j, (mdl, rows) in enumerate(zip(models, train)):
        cand = copy.deepcopy(mdl)
        cand.fit(Xa[rows], ya[rows], upper, lower, add_bias=bool(add_bias),
                 weights=None if wa is None else wa[rows],
                 weights_upper_bound=weights_upper_bound, random_state=rng)
        errors[j] = compute(np.count_nonzero(cand.predict(Xa[valid], add_bias=bool(add_bias))
                                             != y_valid))[0]
        fitted.append(cand)
    chosen = exponential_mechanism(-errors, eps, 1.0, random_state=rng)
    del errors  # not private: never stored or returned
    record = TuningRecord(candidates=tuple(mdl.gamma for mdl in models), chosen=chosen, eps=eps,
                          group_sizes=tuple(len(g) for g in train) + (len(valid),))
    best = models[chosen]
    best.__dict__.update(fitted[chosen].__dict__)  # the one release, assigned at the very end
    best.tuning_ = record
    return best


def _estimator_type():
    """:class:`privatelr.sklearn.DPLogisticRegression` if that module is loaded, else None (no
    instance can exist then; ``import privatelr`` never imports scikit-learn)."""
    module = sys.modules.get("privatelr.sklearn")
    return None if module is None else module.DPLogisticRegression


def _unfitted(estimator, **changes):
    """A new, unfitted estimator with ``estimator``'s parameters and ``changes`` (what
    scikit-learn's ``clone`` does; only :mod:`privatelr.sklearn` imports scikit-learn)."""
    return type(estimator)(**{**estimator.get_params(deep=False), **changes})


def _take(data, idx: np.ndarray):
    """Rows ``idx`` (positions) of an array or a pandas object."""
    return data.iloc[idx] if hasattr(data, "iloc") else data[idx]


def _tune_estimators(models, X, y, eps, *, upper_bounds, lower_bounds, add_bias, weights,
                     weights_upper_bound, random_state, accountant, selection="split",
                     stop_prob=0.0, score_share=SCORE_SHARE, delta=0.0):
    """:func:`tune_classification_model` over ``DPLogisticRegression`` candidates: the same
    split, fits and exponential mechanism, each candidate fitted as itself (its ``data_norm``,
    ``clip``, ``classes``, ``alpha``, ``sample_weight_bound``)."""
    if upper_bounds is not None or lower_bounds is not None:
        raise ValueError("upper_bounds and lower_bounds are DPpack's per-column bounds; "
                         "DPLogisticRegression candidates use their own public data_norm "
                         "(rescale X by public constants first, e.g. with "
                         "privatelr.public_bounds): pass neither")
    if check_bool("add_bias", add_bias):
        raise ValueError("add_bias is for DPpack-style models; DPLogisticRegression candidates "
                         "have their own fit_intercept")
    if weights_upper_bound is not None:
        raise ValueError("weights_upper_bound is for DPpack-style models; set "
                         "sample_weight_bound on the DPLogisticRegression candidates")
    if is_dask(X, y, weights):
        raise TypeError("DPLogisticRegression candidates are tuned on in-memory data; on Dask "
                        "data tune LogisticRegressionDP / SVMDP candidates")
    # one ledger for the one spend: the candidates' own accountants and accountant= must agree
    ledgers = {id(a): a for a in [accountant] + [mdl.accountant for mdl in models]
               if a is not None}
    if len(ledgers) > 1:
        raise ValueError("the candidates and accountant= name different accountants; the "
                         "selection spends eps once, on one ledger: give one accountant")
    ledger = next(iter(ledgers.values()), None)
    if ledger is not None:
        require_budget(ledger, eps, delta)

    # every argument is checked here, before the accountant is charged and before any fit:
    # each candidate runs its own checks (settings, labels against its declared classes,
    # weights against its bound, rows against its data_norm) on all the rows
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    Xa = X.tocsr() if is_sparse(X) else (X if hasattr(X, "iloc") else np.asarray(X))
    ya = y.to_numpy() if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray) \
        else np.asarray(y)
    if ya.ndim == 2 and 1 in ya.shape:
        ya = ya.reshape(-1)
    if ya.ndim != 1 or ya.shape[0] != n:
        raise ValueError(f"y must be a vector with one label per row of X ({n}), got shape "
                         f"{np.shape(y)}")
    wa = None if weights is None else _weight_vector(weights, n)
    for mdl in models:
        _unfitted(mdl, accountant=None).check_fit(Xa, ya, sample_weight=wa)
    m = len(models)
    rng = check_random_state(random_state)
    if selection == "random_stopping":
        if ledger is not None:
            ledger.spend(eps, note=f"tune_classification_model over {m} DPLogisticRegression "
                         "candidates (random stopping, Liu & Talwar: 3 x eps/3)")

        def fit_run(j, eps_fit):
            cand = _unfitted(models[j], accountant=None, random_state=rng, eps=eps_fit)
            return cand.fit(Xa, ya, sample_weight=wa)

        chosen, fit = _select_by_stopping(
            fit_run, lambda cand: np.count_nonzero(cand.predict(Xa) != ya), m, eps, stop_prob,
            score_share, rng)
        record = TuningRecord(candidates=tuple(mdl.alpha if mdl.alpha is not None
                                               else mdl.lambda_ for mdl in models),
                              chosen=chosen, eps=eps, group_sizes=(n,), selection=selection)
        best = models[chosen]
        params = best.get_params(deep=False)
        best.__dict__.update(fit.__dict__)
        best.__dict__.update(params)
        best.tuning_ = record
        return best
    train, valid = dppack_split(n, m)

    if ledger is not None:  # charged before any candidate touches the data; not refunded
        ledger.spend(eps, delta, note=f"tune_classification_model over {m} "
                     "DPLogisticRegression candidates (disjoint groups + exponential mechanism)")
    fitted: list = []
    errors = np.empty(m)
    y_valid = ya[valid]
    for mdl, rows in zip(models, train):
        cand = _unfitted(mdl, accountant=None, random_state=rng)
        cand.fit(_take(Xa, rows), ya[rows], sample_weight=None if wa is None else wa[rows])
        errors[len(fitted)] = np.count_nonzero(cand.predict(_take(Xa, valid)) != y_valid)
        fitted.append(cand)
    chosen = exponential_mechanism(-errors, np.inf if eps == 0 else eps, 1.0, random_state=rng)
    del errors  # not private: never stored or returned
    record = TuningRecord(candidates=tuple(mdl.alpha if mdl.alpha is not None else mdl.lambda_
                                           for mdl in models),
                          chosen=chosen, eps=eps,
                          group_sizes=tuple(len(g) for g in train) + (len(valid),))
    best = models[chosen]
    params = best.get_params(deep=False)          # the caller's settings (seed, accountant)
    best.__dict__.update(fitted[chosen].__dict__)  # the one release, assigned at the very end
    best.__dict__.update(params)
    best.tuning_ = record
    return best


def dplr_tune(formula, data, lambdas=(1e-3, 1e-2, 1e-1, 1.0), eps: float = 1.0, op: bool = True,
              *, data_norm: float = 1.0, clip: bool = False, rp_dim: int = 0,
              compat: str | None = None, verbose: int = 0, random_state=None,
              accountant=None, levels: dict | None = None, selection: str = "split",
              stop_prob: float | None = None, score_share: float = SCORE_SHARE):
    r"""Choose λ for :func:`privatelr.dplr` privately; returns the chosen ``DPLR`` fit.

    The same procedure as :func:`tune_classification_model` over ``dplr`` fits: the rows of
    ``data`` are split by position into ``m + 1`` groups (``m = len(lambdas)``; group ``j`` holds
    rows ``j, j+m+1, …``, the last group validates; **shuffle the rows first**), candidate ``j``
    is ``dplr(formula, group_j, lambda_=lambdas[j], eps=eps, op=op, ...)``, each candidate
    classifies the validation rows with its threshold ``p_tr`` (0.5), and the exponential
    mechanism with utility −errors and sensitivity 1 picks one candidate at the same ε.

    **Privacy** (JMLR11 Theorem 18, neighbours of equal size differing in one row): a changed
    row lies in exactly one group. In training group ``j`` it changes only fit ``j``, which is
    ε-DP (with the calibration ``dplr`` documents); the choice is a function of the fits and the
    untouched validation rows. In the validation group it changes each error count by at most 1,
    because an error is decided row by row from the fitted model and that row's own response
    (compared with the model's 0-coded response value) — so the exponential mechanism is ε-DP.
    Hence the returned model is ε-differentially private (parallel composition over disjoint
    groups, not ``m·ε``). The caveats of ``dplr`` still apply to the returned object: its
    ``CIndex`` and ``value`` are computed from its group without noise, and
    ``compat="PrivateLR"`` voids the guarantee. Data-driven thresholds and ``do_scale`` are not
    offered here because they would break it. Rows with missing values in the validation group
    count as no error for any candidate.

    Parameters
    ----------
    formula : str or formulaic.Formula
        R formula with a response, e.g. ``"am ~ mpg + wt"``.
    data : pandas.DataFrame, dict of columns or Dask DataFrame
        The data, rows in random order. A Dask DataFrame is split by global row position
        partition-wise (the same groups as in memory) and every candidate is fitted on the
        cluster.
    lambdas : sequence of float
        Candidate regularisers λ > 0 (each one is a separate fit on its own group).
    eps : float
        Privacy level ε > 0 for the whole procedure (``0`` or ``inf``: non-private fits and the
        candidate with fewest errors).
    op : bool
        Objective perturbation (True) or output perturbation.
    data_norm, clip, rp_dim, compat, verbose
        Passed to every ``dplr`` call (see :func:`privatelr.dplr`).
    levels : dict, optional
        Declared factor levels ``{column: [level, ...]}`` (see :func:`privatelr.dplr`). The
        design is built once, for every candidate and the validation group alike.
    random_state : int, numpy.random.Generator or None
        One Generator drives every fit and the selection.
    accountant : privatelr.PrivacyAccountant, optional
        Charged ``eps`` once for the whole procedure (parallel composition over the disjoint
        groups, then the exponential mechanism): checked before the data are read, spent
        before the first candidate is fitted. The charge stays spent if a fit then fails (the
        data were read); the candidates are fresh ``DPLR`` objects, so nothing of the caller's
        is left half-fitted.
    selection : {"split", "random_stopping"}
        The disjoint groups above (R's DPpack procedure), or random stopping (module
        docstring): each run fits a uniformly drawn λ on **all** rows with ``(1 - score_share)
        eps/3`` and scores it by its training errors plus Laplace noise at ``score_share *
        eps/3``; the best-scored of a geometric number of runs is released, ε-DP in total
        (Liu & Talwar, STOC 2019). The returned fit's own ``eps`` is its run's fitting ε.
    stop_prob : float, optional
        Random stopping's stopping probability (default ``1/(2m)``).
    score_share : float
        Random stopping: the share of each run's ε spent on its score.

    Returns
    -------
    DPLR
        The chosen fit (trained on its group only, or on all rows with random stopping), with
        ``lambda_`` the regulariser used and ``tuning`` a :class:`TuningRecord` (candidates,
        chosen index, ε, group sizes, selection). The validation error counts, the noisy
        scores and random stopping's number of runs are not stored.

    Examples
    --------
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris().sample(frac=1.0, random_state=0)      # shuffle the rows
    >>> iris[iris.columns[:4]] /= 10                             # public rescaling into the ball
    >>> m = dplr_tune("I(Species == 'virginica') ~ .", iris, lambdas=(0.001, 0.01, 0.1),
    ...               eps=1.0, clip=True, random_state=1)
    >>> m.tuning.candidates, m.tuning.group_sizes
    ((0.001, 0.01, 0.1), (38, 38, 37, 37))
    """
    from .design import as_frame, formula_text, make_spec
    from ._dplr import check_compat, fit_frame

    if isinstance(lambdas, (str, bytes)) or not hasattr(lambdas, "__iter__"):
        raise TypeError(f"lambdas must be a sequence of positive numbers, got {lambdas!r}")
    lambdas = tuple(check_real(f"lambdas[{i}]", lam, low=0.0, low_open=True)
                    for i, lam in enumerate(lambdas))
    if not lambdas:
        raise ValueError("lambdas is empty: give at least one candidate regulariser")
    stop_prob, score_share = _check_selection(selection, stop_prob, score_share, len(lambdas))
    eps = check_real("eps", eps, low=0.0, allow_inf=True)
    data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    compat = check_compat(compat, data_norm)
    if accountant is not None:  # one spend of eps (parallel composition), before any data
        if compat is not None and eps > 0:
            raise ValueError("compat='PrivateLR' fits are not private; an accountant cannot be "
                             "charged for them")
        require_budget(accountant, eps)
    private = eps > 0 and not np.isinf(eps)
    m = len(lambdas)
    text = formula_text(formula)
    # the structure (levels, response coding, columns) is fixed ONCE for every candidate and
    # the validation group: from declarations in a private fit, so a level seen only in one
    # group changes nothing
    if is_dask(data):
        from .backends.dask import as_dask_frame, partition_sum, position_groups, schema_of

        frame = as_dask_frame(data)
        spec = make_spec(text, schema_of(frame), levels=levels, learn=False,
                         why="private tuning (eps > 0)", hint="" if private else " (on Dask "
                         "data levels are never learned from the rows, even at eps=0)")
        if selection == "random_stopping":
            groups = [frame] * (m + 1)
            n = int(compute(frame.shape[0])[0])
            sizes: tuple[int, ...] = (n,)
        else:
            groups, n = position_groups(frame, m + 1)
            train, valid = dppack_split(n, m)             # the sizes, and n >= m + 1
            sizes = tuple(len(g) for g in train + [valid])

        def over_validation(fn, *args):
            return partition_sum(groups[m], fn, *args)
    else:
        if not isinstance(data, (pd.DataFrame, dict)):
            raise TypeError(f"data must be a pandas or Dask DataFrame or a dict of columns, "
                            f"got {type(data).__name__}")
        frame = as_frame(data).reset_index(drop=True)
        spec = make_spec(text, frame, levels=levels, learn=not private or compat is not None,
                         why="private tuning (eps > 0)")
        if selection == "random_stopping":
            groups, sizes = [frame] * (m + 1), (len(frame),)
        else:
            train, valid = dppack_split(len(frame), m)
            groups = [frame.iloc[g].reset_index(drop=True) for g in train + [valid]]
            sizes = tuple(len(g) for g in groups)

        def over_validation(fn, *args):
            return fn(groups[m], *args)
    rng = check_random_state(random_state)
    over_validation(_validation_errors, spec, ())   # the validation rows are valid: before any spend
    if selection == "random_stopping":
        if accountant is not None:
            accountant.spend(eps, note=f"dplr_tune over {m} candidate lambdas (random "
                             "stopping, Liu & Talwar: 3 x eps/3)")

        def fit_run(j, eps_fit):
            return fit_frame(spec, frame, call=f"dplr_tune run (lambda {lambdas[j]:g})",
                             lambda_=lambdas[j], eps=eps_fit, verbose=verbose, rp_dim=rp_dim,
                             threshold="fixed", do_scale=False, op=op, data_norm=data_norm,
                             clip=clip, compat=compat, rng=rng, stacklevel=4)

        def errors_of(fit):
            return over_validation(_validation_errors, spec, ((fit.spec, fit.coef, fit.p_tr),))[0]

        chosen, fit = _select_by_stopping(fit_run, errors_of, m, eps, stop_prob, score_share,
                                          rng)
        return dataclasses.replace(fit, tuning=TuningRecord(
            candidates=lambdas, chosen=chosen, eps=eps, group_sizes=sizes,
            selection=selection))

    if accountant is not None:  # charged before any candidate is fitted; not refunded
        accountant.spend(eps, note=f"dplr_tune over {m} candidate lambdas "
                         "(disjoint groups + exponential mechanism)")
    fits: list = []                     # binary DPLR fits (dplr_tune is not multiclass)
    for j, lam in enumerate(lambdas):   # a loop, not a comprehension: warnings name the caller
        fits.append(fit_frame(spec, groups[j], call=f"dplr_tune candidate {j + 1}",
                              lambda_=lam, eps=eps, verbose=verbose, rp_dim=rp_dim,
                              threshold="fixed", do_scale=False, op=op, data_norm=data_norm,
                              clip=clip, compat=compat, rng=rng, stacklevel=3))
    errors = over_validation(_validation_errors, spec,
                             tuple((fit.spec, fit.coef, fit.p_tr) for fit in fits))
    chosen = exponential_mechanism(-errors, np.inf if eps == 0 else eps, 1.0, random_state=rng)
    del errors  # not private: never stored or returned
    return dataclasses.replace(fits[chosen], tuning=TuningRecord(
        candidates=lambdas, chosen=chosen, eps=eps,
        group_sizes=sizes))


def _validation_errors(part, spec, models) -> np.ndarray:
    """The errors of each model ``(spec, coef, p_tr)`` on validation rows ``part``: a row
    counts when its 0/1 response (under the shared ``spec``) differs from ``p > p_tr``; rows
    with a missing value count for no model. Run on the whole group in memory, and partition
    by partition (then summed) on Dask."""
    observed = spec.rows(part, raw=True, what="the validation group")
    hi = observed.y == 1.0
    out = np.zeros(len(models))
    for j, (mspec, coef, p_tr) in enumerate(models):
        r = mspec.rows(part, response=False, what="the validation group")
        p = outputs(r.X, r.complete, coef, p_tr, mspec.labels, "probabilities",
                    offset=r.offset)[observed.complete]
        ok = ~np.isnan(p)
        out[j] = np.count_nonzero((p[ok] > p_tr) != hi[ok])
    return out


def _weight_vector(weights, n: int) -> np.ndarray:
    """Observation weights as a 1-D NumPy array of length ``n`` (pandas or array-like)."""
    wa = weights.to_numpy() if hasattr(weights, "to_numpy") else np.asarray(weights)
    if wa.ndim != 1 or wa.shape[0] != n:
        raise ValueError(f"weights must be a 1-D array of length {n}, got shape "
                         f"{np.shape(weights)}")
    return wa

