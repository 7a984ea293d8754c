"""Test helper: a WALR release file's text from its fields, with a valid checksum.

Tests that tamper with one field of a release must reach the field's own validation, not the
checksum. This writes the envelope as ``privatelr.envelope`` documents it — an independent
transcription: ``format``, ``format_version``, ``package_version``, the fields, and ``sha256`` of
the canonical JSON (sorted keys, no spaces, ASCII) of everything else.
"""

from __future__ import annotations

import hashlib
import json

_ENVELOPE_KEYS = ("format", "format_version", "package_version", "sha256")
_DROP = object()


def fields_of(text: str) -> dict:
    """A release file's fields as a flat dict with ``format`` and ``version`` (any version)."""
    d = json.loads(text)
    if "format_version" in d:
        d["version"] = d.pop("format_version")
        d.pop("package_version", None)
        d.pop("sha256", None)
    return d


def release_text(fields: dict) -> str:
    """The envelope text for a flat dict of fields (``format``/``version`` may be wrong or
    missing: they become the envelope's ``format``/``format_version`` as they are)."""
    payload = {}
    if "format" in fields:
        payload["format"] = fields["format"]
    if "version" in fields:
        payload["format_version"] = fields["version"]
    payload["package_version"] = "test"
    for key, val in fields.items():
        if key not in ("format", "version"):
            payload[key] = {"$float": "Infinity"} if val == float("inf") else val
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False,
                           ensure_ascii=True)
    payload["sha256"] = hashlib.sha256(canonical.encode("ascii")).hexdigest()
    return json.dumps(payload, indent=1)
