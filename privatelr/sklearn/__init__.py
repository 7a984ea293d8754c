r"""scikit-learn front end: a private classifier, a public-bounds transformer, private pipelines.

Needs the optional extra ``pip install "privatelr[sklearn]"``; ``import privatelr`` never imports
this package or scikit-learn.

* :class:`DPLogisticRegression` — ε-differentially private logistic regression with
  scikit-learn's estimator contract (:mod:`privatelr.sklearn.estimator`: the privacy contract).
* :class:`PublicBoundsTransformer` — the centred public map of :func:`privatelr.public_bounds`
  as a transformer: learns nothing from the rows, pickles, names its output columns, works in a
  ``ColumnTransformer``, and hands its ``data_norm`` to ``DPLogisticRegression(data_norm=
  "from_bounds")`` (:mod:`privatelr.sklearn.bounds`).
* :func:`make_pipeline` and :class:`Pipeline` — scikit-learn's, warning
  (:class:`~privatelr.exceptions.PrivacyWarning`) when a step before a private estimator learned
  statistics from the training rows (:func:`learned_statistics`), and reporting coefficients
  and intervals per unit of the original columns (:mod:`privatelr.sklearn.pipeline`).

Examples
--------
>>> import numpy as np
>>> import pandas as pd
>>> from privatelr import public_bounds
>>> from privatelr.sklearn import DPLogisticRegression, PublicBoundsTransformer, make_pipeline
>>> rng = np.random.default_rng(0)
>>> df = pd.DataFrame({"age": rng.uniform(18, 90, 500), "sex": rng.choice(["F", "M"], 500)})
>>> y = (df.age > 50).astype(int)
>>> pb = public_bounds({"age": (18, 90)}, levels={"sex": ["F", "M"]})
>>> model = make_pipeline(PublicBoundsTransformer(pb),
...                       DPLogisticRegression(eps=1.0, data_norm="from_bounds", random_state=0))
>>> model.fit(df, y).predict(df.head(3)).shape
(3,)
>>> model[:-1].get_feature_names_out().tolist(), model.coefficients().index.tolist()
(['age', 'sex_M'], ['(Intercept)', 'age', 'sex_M'])
"""

from __future__ import annotations

from .bounds import PublicBoundsTransformer
from .estimator import DPLogisticRegression
from .pipeline import Pipeline, learned_statistics, make_pipeline

__all__ = ["DPLogisticRegression", "PublicBoundsTransformer", "Pipeline", "make_pipeline",
           "learned_statistics"]
