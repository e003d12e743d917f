"""Fixtures of the datagen tests."""

from __future__ import annotations

import duckdb
import pytest
from datagen_helpers import duck, ssb_arrow


@pytest.fixture(scope="session")
def ssb_small() -> duckdb.DuckDBPyConnection:
    """SSB at SF 0.1 (600k lineorder rows) registered in DuckDB."""
    return duck(ssb_arrow(0.1))
