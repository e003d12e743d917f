"""A small real SSB database (SF 0.001) for front-end tests."""

from __future__ import annotations

import pytest

from hetdb.storage import Database


@pytest.fixture(scope="session")
def sql_db(tmp_path_factory) -> Database:
    from hetdb.datagen import ssb

    db = Database.open(str(tmp_path_factory.mktemp("sql-ssb") / "db"), create=True)
    ssb.generate(db, 0.001, workers=1)
    return db
