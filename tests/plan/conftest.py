"""Small real databases (SSB and TPC-H at SF 0.001) shared by the planner tests."""

from __future__ import annotations

import pytest

from hetdb.storage import Database


@pytest.fixture(scope="session")
def ssb_db(tmp_path_factory) -> Database:
    from hetdb.datagen import ssb

    db = Database.open(str(tmp_path_factory.mktemp("plan-ssb") / "db"), create=True)
    ssb.generate(db, 0.001, workers=1)
    return db


@pytest.fixture(scope="session")
def tpch_db(tmp_path_factory) -> Database:
    from hetdb.datagen import tpch

    db = Database.open(str(tmp_path_factory.mktemp("plan-tpch") / "db"), create=True)
    tpch.generate(db, 0.001, workers=1)
    return db
