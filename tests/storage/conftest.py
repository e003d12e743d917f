"""Fixtures for storage tests."""

from __future__ import annotations

import pytest

from hetdb.storage import Database


@pytest.fixture
def db(tmp_path) -> Database:
    return Database.open(str(tmp_path / "db"), create=True)
