"""TPC-H through tpchgen-cli into the table store (skipped where tpchgen-cli is not installed)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from hetdb.datagen import tpch
from hetdb.errors import HetdbError
from hetdb.storage import Database

_HAVE_TPCHGEN = (Path(sys.executable).parent / "tpchgen-cli").exists() or shutil.which("tpchgen-cli")


def test_expected_rows():
    rows = tpch.expected_rows(1)
    assert rows == {"region": 5, "nation": 25, "supplier": 10_000, "customer": 150_000, "part": 200_000,
                    "partsupp": 800_000, "orders": 1_500_000, "lineitem": 6_000_000}


@pytest.mark.skipif(not _HAVE_TPCHGEN, reason="tpchgen-cli is not installed")
def test_sf_0_01_all_tables(tmp_path):
    db = Database.open(str(tmp_path / "db"), create=True)
    rows = tpch.generate(db, 0.01, workers=2)
    expected = tpch.expected_rows(0.01)
    assert set(rows) == set(tpch.TABLES) == set(db.tables())
    for name in tpch.TABLES:
        if name == "lineitem":
            assert abs(rows[name] - expected[name]) < 0.02 * expected[name]
        else:
            assert rows[name] == expected[name], name
        assert db.table(name).num_rows == rows[name]
    li = db.table("lineitem").arrow()
    assert li.schema.field("l_extendedprice").type == pa.decimal128(15, 2)
    assert li.schema.field("l_shipdate").type == pa.date32()
    assert not list((tmp_path / "db").glob(".hetdb-tpch-*"))  # temporary files are gone


def test_missing_tpchgen(monkeypatch, tmp_path):
    monkeypatch.setattr(tpch.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HetdbError, match="pip install tpchgen-cli"):
        tpch.find_tpchgen()
