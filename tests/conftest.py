"""Shared fixtures: R's reference numbers copied from shared/reference into tests/fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def load_fixture(name: str):
    with open(FIXTURES / name) as fh:
        return json.load(fh)


@pytest.fixture(scope="session")
def fixture():
    return load_fixture
