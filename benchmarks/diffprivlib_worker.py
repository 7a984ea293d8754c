"""diffprivlib's private logistic regression for ``bench_utility.py``, in its own interpreter.

diffprivlib needs scikit-learn < 1.6, which the development environment does not have, so
``benchmarks/bench_utility.py`` runs this script with the Python of ``benchmarks/.venv-diffprivlib``
(it creates that venv when it is missing). The script imports neither privatelr nor anything of
the development environment: it reads arrays, fits, and writes coefficients back.

Protocol (one call per data set)::

    python diffprivlib_worker.py DIR

``DIR/jobs.json`` is ``{"jobs": [{"eps": e, "seed": s, "C": c, "file": "name.npz"}, ...]}``;
each ``DIR/<file>`` holds ``X_train`` (the design, intercept column included, every row of norm
<= 1) and ``y_train`` (0/1, or 0..K-1 for ``bench_multiclass.py``). For every job the script fits ::

    LogisticRegression(epsilon=eps, data_norm=1.0, C=C, fit_intercept=False, random_state=seed)

and writes ``DIR/coefs.npz`` (``coef``: one row per job, in job order; a failed job's row is
NaN) and ``DIR/report.json`` (versions, and per job: ``ok``, the error message if any, the
warnings raised during the fit other than deprecation notices, the fit time). Test-set metrics
are computed by the caller.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np


def fit_one(X, y, eps, C, seed):
    from diffprivlib.models import LogisticRegression

    model = LogisticRegression(epsilon=eps, data_norm=1.0, C=C, fit_intercept=False,
                               random_state=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    coef = np.asarray(model.coef_, dtype=float).reshape(-1)
    # Binary: the one coefficient vector belongs to label 1. Several classes (labels 0..K-1,
    # bench_multiclass.py): one-vs-rest, coef_ is (K, d), flattened row by row.
    if list(model.classes_) != list(range(len(model.classes_))):
        raise ValueError(f"unexpected classes {list(model.classes_)}")
    # Deprecation notices of the libraries say nothing about this fit: left out.
    messages = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0]}"
                       for w in caught
                       if not issubclass(w.category, (DeprecationWarning, FutureWarning))})
    return coef, messages


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: diffprivlib_worker.py DIR", file=sys.stderr)
        return 2
    import diffprivlib
    import sklearn

    folder = Path(argv[0])
    jobs = json.loads((folder / "jobs.json").read_text())["jobs"]
    coefs, report = [], []
    cache_name, X, y = None, None, None
    for job in jobs:
        if job["file"] != cache_name:        # jobs come grouped by file: load each once
            with np.load(folder / job["file"]) as data:
                X, y = data["X_train"], data["y_train"]
            cache_name = job["file"]
        start = time.perf_counter()
        try:
            coef, messages = fit_one(X, y, float(job["eps"]), float(job["C"]), int(job["seed"]))
            entry = dict(ok=True, error=None, warnings=messages)
        except Exception as exc:            # noqa: BLE001 - reported to the caller, not hidden
            coef = np.full(X.shape[1], np.nan)
            entry = dict(ok=False, error=f"{type(exc).__name__}: {exc}", warnings=[])
        entry["seconds"] = time.perf_counter() - start
        coefs.append(coef)
        report.append(entry)
    np.savez(folder / "coefs.npz", coef=np.array(coefs))
    (folder / "report.json").write_text(json.dumps(
        dict(diffprivlib=diffprivlib.__version__, sklearn=sklearn.__version__,
             numpy=np.__version__, python=sys.version.split()[0], jobs=report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
