"""The fuzz suite's Hypothesis settings: seeded, bounded, reproducible.

Every test in ``tests/fuzz/`` runs under the ``privatelr-fuzz`` profile registered here:

* ``derandomize=True``: the examples are a fixed function of the test (no random seed), so a CI
  failure reproduces on any machine with ``pytest tests/fuzz``;
* ``database=None``: no ``.hypothesis/`` example database, so what runs does not depend on
  earlier runs;
* ``max_examples`` per test (set on each test with ``@settings(max_examples=...)``), chosen so
  that the whole folder runs in about 35-40 s on 2 cores (``time pytest tests/fuzz -q``);
* ``deadline=None``: no per-example time limit. An example takes about 5-100 ms on an idle
  machine, but a loaded CI machine can take seconds, and a deadline would then fail a correct
  build (issue 30); a hang shows as the CI job's timeout instead.

Health checks: none is suppressed.

Hypothesis is a test dependency (``pip install ".[test]"``); without it the suite fails to
import rather than being skipped silently.

``PRIVATELR_FUZZ=long pytest tests/fuzz`` runs 20 times more examples with random seeds (for
a longer hunt outside CI; failures are printed with ``@reproduce_failure`` blobs).
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import settings

from .fuzzlib import SCALE

settings.register_profile(
    "privatelr-fuzz",
    derandomize=SCALE == 1,
    database=None,
    deadline=None,
    print_blob=True,
)
settings.load_profile("privatelr-fuzz")


@pytest.fixture(scope="session", autouse=True)
def _warm_up():
    """Import formulaic and run one fit/predict/save before the first example, so that one-off
    import costs are paid once, outside the examples."""
    import numpy as np
    import pandas as pd

    from privatelr import dplr
    from privatelr.persist import loads

    df = pd.DataFrame({"a": np.linspace(0, 0.5, 8), "s": list("pqpqpqpq"),
                       "y": [0, 1] * 4})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = dplr("y ~ a + s + factor(s)", df, eps=0)
        loads(m.to_json()).predict(df)
    yield
