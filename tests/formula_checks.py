"""Helpers the formula tests share (tests/unit and tests/fuzz; ``tests/`` is on ``sys.path``
through its conftest.py):

* :func:`lines_executed` — a deterministic measure of work: the Python lines run while a
  function runs (no clock);
* :func:`reseal` — a saved model's JSON with its sha256 recomputed after an edit, as someone
  tampering with a file would do (the envelope's checksum rule, privatelr.envelope).
"""

from __future__ import annotations

import hashlib
import json
import sys


def lines_executed(fn) -> int:
    """Python lines run (in privatelr and every library it calls) while ``fn()`` runs."""
    count = 0

    def local(frame, event, arg):
        nonlocal count
        count += event == "line"
        return local

    old = sys.gettrace()
    sys.settrace(lambda frame, event, arg: local)
    try:
        fn()
    finally:
        sys.settrace(old)
    return count


def reseal(payload: dict) -> str:
    """The text of a model file ``payload`` (its parsed JSON, edited) with a valid checksum."""
    body = {k: v for k, v in payload.items() if k != "sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False,
                           ensure_ascii=True)
    body["sha256"] = hashlib.sha256(canonical.encode("ascii")).hexdigest()
    return json.dumps(body)
